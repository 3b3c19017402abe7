"""Periodic services the engine contributes to worker processes: the
schedule planner (SPEC E-9), which turns due cron ticks into
``schedule_launch`` jobs, and the event outbox relay (E-10, X-5), which
keeps one ``event_dispatch`` job in flight while events are pending, and the
leader-gated alert evaluator (O-22). Safe to
run on every worker: idempotency keys make a tick launch once and the
relays of many workers enqueue one dispatch job."""

from __future__ import annotations

import os
import socket

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.engine import schedules
from flowledger.events.relay import EventRelay
from flowledger.handlers.health_service import HealthSnapshots
from flowledger.handlers.retention_service import retention_service
from flowledger.ledger.task_runs import task_run_record
from flowledger.ops.alerts.service import AlertEvaluator
from flowledger.worker.services import PeriodicService


class SchedulePlanner(PeriodicService):
    """Plan due schedule ticks; each run records itself (its node, time and
    how many launch jobs it enqueued) in ``system_task_runs`` in the same
    transaction, for the engine diagnostics (SPEC O-18)."""

    name = "schedule_planner"

    def __init__(self, db: Database, clock: Clock, *, interval_s: float = 10.0) -> None:
        super().__init__(interval_s)
        self.db, self.clock = db, clock
        self.node_id = f"{socket.gethostname()}:{os.getpid()}"

    async def run_once(self) -> None:
        now = self.clock.now()
        async with self.db.begin() as conn:
            launched = await schedules.plan_due(conn, now=now)
            await task_run_record(
                conn,
                self.name,
                node_id=self.node_id,
                started_at=now,
                finished_at=self.clock.now(),
                summary={"launchJobs": len(launched), "jobIds": launched[:20]},
            )


def engine_services(db: Database, clock: Clock) -> list[PeriodicService]:
    services: list[PeriodicService] = [SchedulePlanner(db, clock), EventRelay(db, clock)]
    services.append(AlertEvaluator(db, clock))  # SPEC O-22, leader-gated
    services.append(HealthSnapshots(db, clock))  # SPEC O-16, leader-gated
    # SPEC O-20: the daily data-retention task (leader-gated)
    services.append(retention_service(db, clock))
    return services
