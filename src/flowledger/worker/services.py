"""The periodic services of a worker process, all of one shape (an interval
and a jitter validated at construction, ``run_once`` kept apart from the
loop, jittered sleeps, a stop event, test signals): lease renewal with abort
signals (SPEC L-10, L-11), node heartbeats (L-21) and, as a
:class:`LeaderService` behind the process's leader elector, the cluster-wide
``workflow-jobs-drain`` task (L-20). The engine's maintenance services (the
schedule planner, health snapshots, retention, alert evaluation) are
:class:`LeaderService` too (:mod:`flowledger.handlers.services`)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from datetime import datetime, timedelta

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.errors import ConfigurationError
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import RescueReport
from flowledger.ledger.task_runs import task_run_record
from flowledger.worker.context import AbortReason, JobContext
from flowledger.worker.leader import LeaderElector

log = structlog.get_logger("flowledger.worker")

DRAIN_TASK = "workflow-jobs-drain"


MAX_JITTER = 0.5


class PeriodicService:
    """Run ``run_once`` every ``interval_s`` (± ``jitter`` of it) until the
    stop event is set. A failing run is logged and retried at the next tick;
    it never stops the worker (an error escaping the loop itself does: the
    worker's supervisor then stops the process).

    A service whose ``run_at_start`` is False waits one (jittered) interval
    before its first run: a worker starts with a backlog to claim, and a
    heavy periodic read (the health inspection, the alert metrics) run at
    that moment competes with the first claims for the same cores (issue 34
    item 4: on the volume database ~3 s of a 12 s drain).

    Test signals: ``runs`` counts finished runs, ``last_error`` keeps the
    latest failure, and ``ran`` is set after each run (clear it to wait for
    the next one)."""

    name = "service"
    run_at_start = True

    def __init__(self, interval_s: float, *, jitter: float = 0.1) -> None:
        if not interval_s > 0:
            raise ConfigurationError(
                f"{self.name}: the interval must be positive (got {interval_s})",
                field="interval_s",
            )
        if not 0 <= jitter <= MAX_JITTER:
            raise ConfigurationError(
                f"{self.name}: jitter must be between 0 and {MAX_JITTER}", field="jitter"
            )
        self.interval_s, self.jitter = interval_s, jitter
        self.runs = 0
        self.last_error: BaseException | None = None
        self.ran = asyncio.Event()

    async def run_once(self) -> None:
        raise NotImplementedError

    def next_delay(self) -> float:
        return self.interval_s * random.uniform(1 - self.jitter, 1 + self.jitter)

    async def run(self, stop: asyncio.Event) -> None:
        if not self.run_at_start and await self._stopped_within(self.next_delay(), stop):
            return
        while not stop.is_set():
            try:
                await self.run_once()
                self.last_error = None
            except Exception as exc:
                self.last_error = exc
                log.warning("service_failed", service=self.name, error=str(exc))
            self.runs += 1
            self.ran.set()
            await self._stopped_within(self.next_delay(), stop)

    @staticmethod
    async def _stopped_within(delay_s: float, stop: asyncio.Event) -> bool:
        """Wait ``delay_s`` or until ``stop`` is set; True when it was set."""
        try:
            async with asyncio.timeout(delay_s):
                await stop.wait()
        except TimeoutError:
            return False
        return True


class LeaderService(PeriodicService):
    """A periodic service that runs once per cluster: ``run_once`` leads
    under the lease named like the service through the process's
    :class:`~flowledger.worker.leader.LeaderElector` (its own when none is
    given; ``holder`` names it)."""

    def __init__(
        self,
        db: Database,
        interval_s: float,
        *,
        elector: LeaderElector | None = None,
        holder: str | None = None,
        jitter: float = 0.1,
        ledger: LedgerDriver | None = None,
    ) -> None:
        super().__init__(interval_s, jitter=jitter)
        self.elector = elector or LeaderElector(db, holder, ledger=ledger)
        # the ledger driver of the service's database, chosen once
        self.ledger = ledger or self.elector.ledger

    @property
    def holder(self) -> str:
        return self.elector.holder

    async def lead(self, conn: AsyncConnection, *, now: datetime, ttl_intervals: int = 2) -> bool:
        """Take or extend this service's lease (TTL ``ttl_intervals`` intervals)."""
        ttl = timedelta(seconds=self.interval_s * ttl_intervals)
        return await self.elector.lead(conn, self.name, now=now, ttl=ttl)


class LeaseRenewer(PeriodicService):
    """Extend the leases of every job this process holds; fire the abort
    signal of those whose lease was lost or whose deadline passed."""

    name = "lease_renewer"

    def __init__(
        self,
        db: Database,
        clock: Clock,
        inflight: Callable[[], list[JobContext]],
        *,
        interval_s: float,
        lease_ms: int,
        ledger: LedgerDriver | None = None,
    ) -> None:
        super().__init__(interval_s)
        self.db, self.clock, self.inflight, self.lease_ms = db, clock, inflight, lease_ms
        self.ledger = ledger or ledger_driver(db)  # chosen once

    async def run_once(self) -> None:
        now = self.clock.now()
        contexts = [ctx for ctx in self.inflight() if not ctx.aborted]
        for ctx in contexts:
            if ctx.job.execution_deadline <= now:
                ctx.fire_abort(AbortReason.DEADLINE)
        alive = [ctx for ctx in contexts if not ctx.aborted]
        owned = await self.ledger.jobs_renew_leases(
            self.db, [c.job for c in alive], now=now, lease_ms=self.lease_ms
        )
        for ctx in alive:
            if ctx.job.id not in owned:
                ctx.fire_abort(AbortReason.LEASE_LOST)


class Heartbeat(PeriodicService):
    name = "heartbeat"

    def __init__(
        self,
        db: Database,
        clock: Clock,
        node_id: str,
        slots_in_use: Callable[[], int],
        *,
        interval_s: float,
        ledger: LedgerDriver | None = None,
    ) -> None:
        super().__init__(interval_s)
        self.db, self.clock, self.node_id, self.slots_in_use = db, clock, node_id, slots_in_use
        self.ledger = ledger or ledger_driver(db)  # chosen once

    async def run_once(self) -> None:
        async with self.db.begin() as conn:
            await self.ledger.node_heartbeat(
                conn, self.node_id, slots_in_use=self.slots_in_use(), now=self.clock.now()
            )


SUMMARY_IDS = 20


def drain_summary(report: RescueReport) -> dict[str, object]:
    """What one drain run reclaimed, as its ``system_task_runs`` row keeps it
    (SPEC O-18): the counts and the first ids of each outcome."""
    return {
        "reclaimedToPending": len(report.retried),
        "reclaimedToDead": len(report.dead),
        "pendingIds": report.retried[:SUMMARY_IDS],
        "deadIds": report.dead[:SUMMARY_IDS],
        "hintedPools": report.hinted_pools,
    }


class Drain(LeaderService):
    """``workflow-jobs-drain``: once per cluster (leader lease row), reclaim
    expired leases and republish wake hints, and record the run (what it
    reclaimed) in ``system_task_runs``. Runs no handler."""

    name = DRAIN_TASK

    def __init__(
        self,
        db: Database,
        clock: Clock,
        node_id: str,
        *,
        interval_s: float,
        elector: LeaderElector | None = None,
        ledger: LedgerDriver | None = None,
    ) -> None:
        elector = elector or LeaderElector(db, node_id, ledger=ledger)
        super().__init__(db, interval_s, elector=elector, ledger=ledger)
        self.db, self.clock, self.node_id = db, clock, node_id
        self.last_report: RescueReport | None = None

    async def run_once(self) -> None:
        now = self.clock.now()
        async with self.db.begin() as conn:
            if not await self.lead(conn, now=now):
                return
            self.last_report = await self.ledger.jobs_rescue(conn, now=now)
            await task_run_record(
                conn,
                DRAIN_TASK,
                node_id=self.node_id,
                started_at=now,
                finished_at=self.clock.now(),
                summary=drain_summary(self.last_report),
            )
        report = self.last_report
        if report.retried or report.dead:
            log.info("drain_reclaimed", retried=len(report.retried), dead=len(report.dead))
