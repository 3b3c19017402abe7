"""The worker process (SPEC L-6, L-20, L-21): registers a node, runs its
pools (the two built-in ones and any user pools of its :class:`WorkerConfig`,
or only some of them), the settler, the wake listener, lease renewal, heartbeats and the
drain, and shuts down gracefully — stop claiming, let running handlers finish
within the grace period, abort and release the rest, flush settlements, mark
the node stopped, resign every leader lease. If any sub-service dies, the
whole worker stops (:mod:`flowledger.worker.supervisor`: it is better to
restart than to run half a worker)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import structlog
from sqlalchemy.exc import DBAPIError, InterfaceError

from flowledger.clock import Clock, DatabaseClock, SystemClock
from flowledger.db.database import Database
from flowledger.errors import ConfigurationError
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import NodeInfo, new_node
from flowledger.ledger.types import MAX_POOL_SLOTS, parse_pools, validate_pool_name
from flowledger.settings import Settings
from flowledger.states import Pool
from flowledger.worker import wake
from flowledger.worker.context import AbortReason, JobContext
from flowledger.worker.leader import LeaderElector
from flowledger.worker.pool import PoolConfig, PoolRunner
from flowledger.worker.registry import HandlerRegistry
from flowledger.worker.services import Drain, Heartbeat, LeaseRenewer, PeriodicService
from flowledger.worker.settler import Settler
from flowledger.worker.supervisor import first_to_end

log = structlog.get_logger("flowledger.worker")
STARTUP_FIRST_DELAY_S = 0.5
STARTUP_MAX_DELAY_S = 15.0


def _one_line(exc: BaseException) -> str:
    """The first line of an error (a driver error can span many), at most 300 characters."""
    orig = getattr(exc, "orig", None) or exc
    text = str(orig).strip().splitlines()
    return f"{type(orig).__name__}: {text[0] if text else ''}"[:300]


@dataclass(frozen=True)
class WorkerConfig:
    """What one worker runs: ``pools`` maps each pool it claims from to its
    slots (built-in or user pools; a pool left out is not run here, and its
    jobs wait for a worker that runs it), and its timings."""

    pools: dict[str, int] = field(
        default_factory=lambda: {Pool.LEDGER.value: 4, Pool.OUTBOUND.value: 4}
    )
    poll_interval_s: float = 2.0
    lease_ms: int = 60_000
    lease_renew_interval_s: float = 15.0
    heartbeat_interval_s: float = 15.0
    drain_interval_s: float = 60.0
    shutdown_grace_s: float = 30.0
    abort_grace_s: float = 5.0
    run_drain: bool = True
    listen: bool = True

    def __post_init__(self) -> None:
        if not self.pools:
            raise ConfigurationError("a worker needs at least one pool", field="pools")
        for name, slots in self.pools.items():
            validate_pool_name(name, field="pools")
            if not isinstance(slots, int) or not 1 <= slots <= MAX_POOL_SLOTS:
                raise ConfigurationError(
                    f"pool {name!r} needs a slot count from 1 to {MAX_POOL_SLOTS}, got {slots!r}",
                    field="pools",
                )

    @classmethod
    def from_settings(cls, settings: Settings) -> WorkerConfig:
        """The built-in pools with ``ledger_slots`` / ``outbound_slots`` and
        the user pools of ``FLOWLEDGER_POOLS``."""
        return cls(
            pools={
                Pool.LEDGER.value: settings.ledger_slots,
                Pool.OUTBOUND.value: settings.outbound_slots,
                **settings_pools(settings),
            },
            poll_interval_s=settings.poll_interval_s,
            lease_ms=settings.lease_ms,
            lease_renew_interval_s=settings.lease_renew_interval_s,
            heartbeat_interval_s=settings.heartbeat_interval_s,
            drain_interval_s=settings.drain_interval_s,
            shutdown_grace_s=settings.shutdown_grace_s,
        )


def settings_pools(settings: Settings) -> dict[str, int]:
    """The user pools of ``FLOWLEDGER_POOLS`` (``"emails=2,reports=1"``)."""
    return parse_pools(settings.pools, field="FLOWLEDGER_POOLS", allow_builtin=False)


class Worker:
    def __init__(
        self,
        db: Database,
        config: WorkerConfig | None = None,
        *,
        clock: Clock | None = None,
        roles: list[str] | None = None,
        handlers: HandlerRegistry | None = None,
        extra_services: Callable[[Database, Clock, LeaderElector], list[PeriodicService]]
        | None = None,
        ledger: LedgerDriver | None = None,
    ) -> None:
        """A worker over ``db`` running ``handlers`` (none when not given: a
        job of a type it has no handler for ends dead). ``extra_services``
        builds the maintenance services from the database, the clock and this
        process's leader elector (the runtime passes the engine's). ``ledger``:
        the database's ledger driver, when the caller chose it already (the
        runtime's); else the worker chooses it once here."""
        self.db = db
        self.ledger = ledger or ledger_driver(db)  # chosen once: steps, node, leases
        self.config = config or WorkerConfig()
        # the database's clock (issue 16: no dialect branch here): on SQLite
        # it is the host's, and the calibration measures an offset of ~0
        self.clock: Clock = clock or DatabaseClock()
        self.node: NodeInfo = new_node(roles or ["worker"], dict(self.config.pools))
        self.handlers = handlers or HandlerRegistry()
        self.elector = LeaderElector(db, self.node.id, ledger=self.ledger)
        self.settler = Settler(db, self.clock)
        self.pools = [
            PoolRunner(
                db,
                self.clock,
                self.settler,
                self.node.id,
                PoolConfig(
                    name,
                    slots,
                    self.config.poll_interval_s,
                    self.config.lease_ms,
                    self.config.abort_grace_s,
                ),
                self.handlers,
                ledger=self.ledger,
            )
            for name, slots in self.config.pools.items()
        ]
        self.settler.on_flushed.extend(pool.wake for pool in self.pools)
        self.renewer = LeaseRenewer(
            db,
            self.clock,
            self.inflight,
            interval_s=self.config.lease_renew_interval_s,
            lease_ms=self.config.lease_ms,
            ledger=self.ledger,
        )
        self.heartbeat = Heartbeat(
            db,
            self.clock,
            self.node.id,
            self.slots_in_use,
            interval_s=self.config.heartbeat_interval_s,
            ledger=self.ledger,
        )
        self.drain = Drain(
            db,
            self.clock,
            self.node.id,
            interval_s=self.config.drain_interval_s,
            elector=self.elector,
            ledger=self.ledger,
        )
        self.extra_services = extra_services(db, self.clock, self.elector) if extra_services else []
        self.started = asyncio.Event()

    def inflight(self) -> list[JobContext]:
        return [ctx for pool in self.pools for ctx in pool.contexts.values()]

    def slots_in_use(self) -> int:
        return sum(pool.busy for pool in self.pools)

    async def _calibrate_clock(self) -> None:
        if isinstance(self.clock, DatabaseClock):
            before = SystemClock().now()
            db_now = await self.db.now()
            self.clock.calibrate(db_now, before, SystemClock().now())

    async def _start_up(self, stop: asyncio.Event) -> bool:
        """Calibrate the clock and register the node, waiting for the database
        with backoff (one log line per attempt, no traceback) while it is down
        or restarting (issue 17 item 12); False when stopped meanwhile."""
        delay, attempt = STARTUP_FIRST_DELAY_S, 0
        while not stop.is_set():
            attempt += 1
            try:
                await self._calibrate_clock()
                async with self.db.begin() as conn:
                    await self.ledger.node_register(conn, self.node, now=self.clock.now())
                return True
            except (OSError, DBAPIError, InterfaceError) as exc:
                log.warning(
                    "worker_waiting_for_database",
                    attempt=attempt,
                    retry_in_s=round(delay, 2),
                    error=_one_line(exc),
                )
            try:
                async with asyncio.timeout(delay):
                    await stop.wait()
            except TimeoutError:
                pass
            delay = min(delay * 2, STARTUP_MAX_DELAY_S)
        return False

    async def run(self, stop: asyncio.Event) -> None:
        """Run until ``stop`` is set (or a sub-service dies), then shut down."""
        if not await self._start_up(stop):
            log.info("worker_stopped_before_start", node=self.node.id)
            return
        log.info("worker_started", node=self.node.id, pools=self.config.pools)
        stop_claiming = asyncio.Event()
        stop_services = asyncio.Event()
        claimers: dict[str, asyncio.Future[Any]] = {
            f"pool:{pool.config.name}": asyncio.ensure_future(pool.run(stop_claiming))
            for pool in self.pools
        }
        services: dict[str, asyncio.Future[Any]] = {
            "settler": asyncio.ensure_future(self.settler.run(stop_services)),
            "lease_renewer": asyncio.ensure_future(self.renewer.run(stop_services)),
            "heartbeat": asyncio.ensure_future(self.heartbeat.run(stop_services)),
        }
        if self.config.listen:
            services["wake_listener"] = asyncio.ensure_future(wake.listen(self.db, stop_services))
        if self.config.run_drain:
            services[self.drain.name] = asyncio.ensure_future(self.drain.run(stop_services))
        for service in self.extra_services:
            services[service.name] = asyncio.ensure_future(service.run(stop_services))
        self.started.set()
        try:
            await first_to_end(stop, {**claimers, **services})
        finally:
            stop_claiming.set()
            for pool in self.pools:
                pool.wake()
            await asyncio.gather(*claimers.values(), return_exceptions=True)
            await self._finish_running()
            stop_services.set()
            await asyncio.gather(*services.values(), return_exceptions=True)
            try:
                await self.elector.resign()  # another node leads at its next tick
            except Exception as exc:
                log.warning("leader_resign_failed", error=str(exc))
            try:
                async with self.db.begin() as conn:
                    await self.ledger.node_stop(conn, self.node.id, now=self.clock.now())
            except Exception as exc:
                log.warning("node_stop_failed", error=str(exc))
            log.info("worker_stopped", node=self.node.id)

    async def _finish_running(self) -> None:
        grace = self.config.shutdown_grace_s
        idle = await asyncio.gather(*(p.wait_idle(grace) for p in self.pools))
        if all(idle):
            return
        for pool in self.pools:
            pool.abort_all(AbortReason.SHUTDOWN)
        await asyncio.gather(*(p.wait_idle(self.config.abort_grace_s + 5) for p in self.pools))
