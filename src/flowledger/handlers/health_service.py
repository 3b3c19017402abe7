"""The health snapshot service (SPEC O-16 health history): a periodic
leader service (the ``workflow-health-snapshot`` lease of the process's
leader elector) that, once per cluster, snapshots the health score, the
inspection counts by rule and the runtime-status figures every
``FLOWLEDGER_HEALTH_SNAPSHOT_INTERVAL_S`` (default 300 s)."""

from __future__ import annotations

from datetime import timedelta

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.ops.health.history import measure, snapshot_due, store_snapshot
from flowledger.worker.leader import LeaderElector
from flowledger.worker.services import LeaderService

SNAPSHOT_TASK = "workflow-health-snapshot"


class HealthSnapshots(LeaderService):
    name = SNAPSHOT_TASK
    # the first snapshot one interval after the start, not beside the first
    # claims (the inspection reads every rule: seconds at 90 days of history)
    run_at_start = False

    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        interval_s: float,
        holder: str | None = None,
        elector: LeaderElector | None = None,
    ) -> None:
        super().__init__(db, interval_s, elector=elector, holder=holder)
        self.db, self.clock = db, clock

    async def run_once(self) -> None:
        await self.snapshot_once()

    async def snapshot_once(self) -> bool:
        """Take a snapshot when this process leads and one is due; True when
        one was written."""
        now = self.clock.now()
        interval = timedelta(seconds=self.interval_s)
        async with self.db.begin() as conn:
            if not await self.lead(conn, now=now):
                return False
            if not await snapshot_due(conn, now=now, interval=interval):
                return False
        async with self.db.read() as conn:
            figures = await measure(conn, now=now)
        async with self.db.begin() as conn:
            return await store_snapshot(conn, figures, interval=interval)
