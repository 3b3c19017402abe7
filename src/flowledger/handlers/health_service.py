"""The health snapshot service (SPEC O-16 health history): a periodic
service on every worker that, once per cluster (the ``workflow-health-snapshot``
leader lease of ``system_leader_leases``), snapshots the health score, the
inspection counts by rule and the runtime-status figures every
``FLOWLEDGER_HEALTH_SNAPSHOT_INTERVAL_S`` (default 300 s)."""

from __future__ import annotations

import os
import socket
import uuid
from datetime import timedelta

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.ledger.nodes import leader_acquire
from flowledger.ops.health_history import measure, snapshot_due, store_snapshot
from flowledger.settings import get_settings
from flowledger.worker.services import PeriodicService

SNAPSHOT_TASK = "workflow-health-snapshot"


class HealthSnapshots(PeriodicService):
    name = SNAPSHOT_TASK

    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        interval_s: float | None = None,
        holder: str | None = None,
    ) -> None:
        settings = get_settings()
        super().__init__(interval_s or settings.health_snapshot_interval_s)
        self.db, self.clock = db, clock
        self.holder = holder or f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"

    async def run_once(self) -> None:
        await self.snapshot_once()

    async def snapshot_once(self) -> bool:
        """Take a snapshot when this process leads and one is due; True when
        one was written."""
        now = self.clock.now()
        interval = timedelta(seconds=self.interval_s)
        async with self.db.begin() as conn:
            if not await leader_acquire(
                conn, SNAPSHOT_TASK, self.holder, now=now, ttl=interval * 2
            ):
                return False
            if not await snapshot_due(conn, now=now, interval=interval):
                return False
        async with self.db.read() as conn:
            figures = await measure(conn, now=now)
        async with self.db.begin() as conn:
            return await store_snapshot(conn, figures, interval=interval)
