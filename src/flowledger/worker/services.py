"""The periodic services of a worker process, all of one shape (a config with
defaults, ``run_once`` kept apart from the loop, jittered sleeps, a stop
event): lease renewal with abort signals (SPEC L-10, L-11), node heartbeats
(L-21) and the cluster-wide ``workflow-jobs-drain`` task behind a leader lease
(L-20)."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Callable
from datetime import timedelta

import structlog

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.ledger.fencing import jobs_renew_leases
from flowledger.ledger.nodes import leader_acquire, node_heartbeat
from flowledger.ledger.rescue import RescueReport, jobs_rescue
from flowledger.ledger.task_runs import task_run_record
from flowledger.worker.context import AbortReason, JobContext

log = structlog.get_logger("flowledger.worker")

DRAIN_TASK = "workflow-jobs-drain"


class PeriodicService:
    """Run ``run_once`` every ``interval_s`` (±10 % jitter) until stopped.
    A failing run is logged and retried at the next tick; it never stops the
    worker."""

    name = "service"

    def __init__(self, interval_s: float) -> None:
        self.interval_s = interval_s

    async def run_once(self) -> None:
        raise NotImplementedError

    async def run(self, stop: asyncio.Event) -> None:
        while not stop.is_set():
            try:
                await self.run_once()
            except Exception as exc:
                log.warning("service_failed", service=self.name, error=str(exc))
            delay = self.interval_s * random.uniform(0.9, 1.1)
            try:
                async with asyncio.timeout(delay):
                    await stop.wait()
            except TimeoutError:
                pass


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
    ) -> None:
        super().__init__(interval_s)
        self.db, self.clock, self.inflight, self.lease_ms = db, clock, inflight, lease_ms

    async def run_once(self) -> None:
        now = self.clock.now()
        contexts = [ctx for ctx in self.inflight() if not ctx.aborted]
        for ctx in contexts:
            if ctx.job.execution_deadline <= now:
                ctx.fire_abort(AbortReason.DEADLINE)
        alive = [ctx for ctx in contexts if not ctx.aborted]
        owned = await jobs_renew_leases(
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
    ) -> None:
        super().__init__(interval_s)
        self.db, self.clock, self.node_id, self.slots_in_use = db, clock, node_id, slots_in_use

    async def run_once(self) -> None:
        async with self.db.begin() as conn:
            await node_heartbeat(
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


class Drain(PeriodicService):
    """``workflow-jobs-drain``: once per cluster (leader lease row), reclaim
    expired leases and republish wake hints, and record the run (what it
    reclaimed) in ``system_task_runs``. Runs no handler."""

    name = DRAIN_TASK

    def __init__(self, db: Database, clock: Clock, node_id: str, *, interval_s: float) -> None:
        super().__init__(interval_s)
        self.db, self.clock, self.node_id = db, clock, node_id
        self.last_report: RescueReport | None = None

    async def run_once(self) -> None:
        now = self.clock.now()
        async with self.db.begin() as conn:
            leader = await leader_acquire(
                conn, DRAIN_TASK, self.node_id, now=now, ttl=timedelta(seconds=self.interval_s * 2)
            )
            if not leader:
                return
            self.last_report = await jobs_rescue(conn, now=now)
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
