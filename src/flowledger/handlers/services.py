"""The maintenance services the engine contributes to worker processes, all
:class:`~flowledger.worker.services.PeriodicService` of one shape:

- leader-gated (one per cluster, behind the process's
  :class:`~flowledger.worker.leader.LeaderElector`, which resigns on
  shutdown): the schedule planner (SPEC E-9), which turns due cron ticks into
  ``schedule_launch`` jobs; the alert evaluator (O-22); the health snapshot
  (O-16); the daily data retention (O-20); the history partitions created
  ahead (PostgreSQL, issue 34 item 1). The drain (L-20) is the worker's
  own leader service.
- on every worker: the event outbox relay (E-10, X-5), which keeps one
  ``event_dispatch`` job in flight while events are pending. It need not
  lead: idle it is one read on the outbox's status index, while a lease would
  cost every worker a write transaction per tick (2 s) on the one SQLite
  writer; and the dispatch job's idempotency key makes many relays enqueue it
  once. It runs everywhere so that a dead leader never delays events by a
  lease TTL."""

from __future__ import annotations

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.engine import schedules
from flowledger.events.relay import EventRelay
from flowledger.handlers.health_service import HealthSnapshots
from flowledger.handlers.partition_service import HistoryPartitions
from flowledger.handlers.retention_service import retention_service
from flowledger.ledger.task_runs import task_run_record
from flowledger.ops.alerts.service import AlertEvaluator
from flowledger.settings import Settings
from flowledger.worker.leader import LeaderElector
from flowledger.worker.services import LeaderService, PeriodicService

PLANNER_TASK = "schedule_planner"
PLANNER_INTERVAL_S = 10.0


class SchedulePlanner(LeaderService):
    """Plan due schedule ticks (once per cluster); each run records itself
    (its node, time and how many launch jobs it enqueued) in
    ``system_task_runs`` in the same transaction, for the engine diagnostics
    (SPEC O-18). Its lease is named like the service."""

    name = PLANNER_TASK

    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        interval_s: float = PLANNER_INTERVAL_S,
        elector: LeaderElector | None = None,
    ) -> None:
        super().__init__(db, interval_s, elector=elector)
        self.db, self.clock = db, clock

    async def run_once(self) -> None:
        now = self.clock.now()
        async with self.db.begin() as conn:
            if not await self.lead(conn, now=now):
                return
            launched = await schedules.plan_due(conn, now=now, ledger=self.ledger)
            await task_run_record(
                conn,
                self.name,
                node_id=self.holder,
                started_at=now,
                finished_at=self.clock.now(),
                summary={"launchJobs": len(launched), "jobIds": launched[:20]},
            )


def engine_services(
    db: Database,
    clock: Clock,
    *,
    elector: LeaderElector | None = None,
    settings: Settings,
) -> list[PeriodicService]:
    """The engine's maintenance services as ``settings`` (the runtime's)
    configure them, the leader-gated ones sharing ``elector`` (a new one
    when none is given)."""
    elector = elector or LeaderElector(db)
    return [
        SchedulePlanner(db, clock, elector=elector),
        EventRelay(db, clock),
        AlertEvaluator(db, clock, interval_s=settings.alert_eval_interval_s, elector=elector),
        HealthSnapshots(db, clock, interval_s=settings.health_snapshot_interval_s, elector=elector),
        retention_service(db, clock, settings=settings, elector=elector),
        HistoryPartitions(
            db,
            clock,
            interval_s=settings.partition_interval_s,
            ahead_days=settings.partition_ahead_days,
            elector=elector,
        ),
    ]
