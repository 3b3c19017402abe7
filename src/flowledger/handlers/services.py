"""Periodic services the engine contributes to worker processes: the
schedule planner (SPEC E-9), which turns due cron ticks into
``schedule_launch`` jobs, and the event outbox relay (E-10, X-5), which
keeps one ``event_dispatch`` job in flight while events are pending. Safe to
run on every worker: idempotency keys make a tick launch once and the
relays of many workers enqueue one dispatch job."""

from __future__ import annotations

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.engine.facade import Engine
from flowledger.events.relay import EventRelay
from flowledger.handlers.retention_service import retention_service
from flowledger.worker.services import PeriodicService


class SchedulePlanner(PeriodicService):
    name = "schedule_planner"

    def __init__(self, db: Database, clock: Clock, *, interval_s: float = 10.0) -> None:
        super().__init__(interval_s)
        self.engine = Engine(db, clock)

    async def run_once(self) -> None:
        await self.engine.plan_schedules()


def engine_services(db: Database, clock: Clock) -> list[PeriodicService]:
    services: list[PeriodicService] = [SchedulePlanner(db, clock), EventRelay(db, clock)]
    # SPEC O-20: the daily data-retention task (leader-gated)
    services.append(retention_service(db, clock))
    return services
