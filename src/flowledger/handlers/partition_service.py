"""The ``history-partitions`` maintenance service (issue 34 item 1): a
leader service (one per cluster, the lease named like it) that every
``FLOWLEDGER_PARTITION_INTERVAL_S`` (default 3600 s) makes sure the
partitioned attempts history (``workflow_job_executions`` on PostgreSQL)
has its day partitions for today and the next
``FLOWLEDGER_PARTITION_AHEAD_DAYS`` days (default 7), so attempts never land
in the ``DEFAULT`` partition while a worker runs. Each run that created a
partition records itself in ``system_task_runs`` (engine diagnostics). On
SQLite, or an unpartitioned table, a run does nothing.

A service of the worker rather than pg_partman: it needs no extension (a
managed PostgreSQL may not offer pg_partman, and installing one needs a
superuser), it runs wherever a worker runs with the lease every other
maintenance service uses, and creating one day's table is a handful of DDL
statements (:mod:`flowledger.ledger.driver.history_partitions`); retention, which
must decide per partition whether any row is still kept, is the engine's own
anyway (pg_partman's retention drops by age alone)."""

from __future__ import annotations

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.ledger.driver.history_partitions import partitions_ensure
from flowledger.ledger.task_runs import task_run_record
from flowledger.worker.leader import LeaderElector
from flowledger.worker.services import LeaderService

PARTITIONS_TASK = "history-partitions"


class HistoryPartitions(LeaderService):
    name = PARTITIONS_TASK

    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        interval_s: float,
        ahead_days: int,
        holder: str | None = None,
        elector: LeaderElector | None = None,
    ) -> None:
        super().__init__(db, interval_s, elector=elector, holder=holder)
        self.db, self.clock, self.ahead_days = db, clock, ahead_days

    async def run_once(self) -> None:
        await self.ensure_once()

    async def ensure_once(self) -> list[str] | None:
        """Create the missing day partitions when this process leads; the
        names created (None: not the leader)."""
        now = self.clock.now()
        async with self.db.begin() as conn:
            if not await self.lead(conn, now=now):
                return None
        async with self.db.begin() as conn:
            created = await partitions_ensure(conn, now=now, ahead_days=self.ahead_days)
            if created:
                await task_run_record(
                    conn,
                    self.name,
                    node_id=self.holder,
                    started_at=now,
                    finished_at=self.clock.now(),
                    summary={"created": created},
                )
        return created
