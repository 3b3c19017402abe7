"""The ``data-retention`` system task (SPEC O-20): a periodic service on
every worker that, behind the ``data-retention`` leader lease (one leader per
cluster, ``system_leader_leases``), starts one scheduled retention run per
day at the configured local time (``FLOWLEDGER_RETENTION_TIME_OF_DAY``,
default 03:00, in ``FLOWLEDGER_RETENTION_TIME_ZONE``, default the server's
zone).

"Due" means: no scheduled run has started since the latest daily slot at or
before now — so a leader that was down at 03:00 catches up when it comes
back, a new leader after a failover does not run the day twice, and the
record of runs (``workflow_retention_runs``), not process memory, decides.
The run itself (batches, protection, its own run lease) is
:func:`flowledger.ops.retention.runs.run_retention`.
"""

from __future__ import annotations

from datetime import datetime, time, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import structlog

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.engine.tasks import SYSTEM as SYSTEM_ACTOR
from flowledger.errors import ConfigurationError
from flowledger.ops.analytics.time_zone import server_time_zone
from flowledger.ops.retention.runs import RetentionRunning, last_scheduled_start, run_retention
from flowledger.settings import Settings
from flowledger.worker.leader import LeaderElector
from flowledger.worker.services import LeaderService

log = structlog.get_logger("flowledger.retention")

RETENTION_TASK = "data-retention"


def latest_slot(now: datetime, zone: ZoneInfo, at: time) -> datetime:
    """The latest instant ``<= now`` whose local time in ``zone`` is ``at``."""
    local_day = now.astimezone(zone).date()
    slot = datetime.combine(local_day, at, zone)
    if slot > now:
        slot = datetime.combine(local_day - timedelta(days=1), at, zone)
    return slot


class DataRetention(LeaderService):
    name = RETENTION_TASK

    def __init__(
        self,
        db: Database,
        clock: Clock,
        *,
        interval_s: float,
        at: time,
        zone: ZoneInfo,
        holder: str | None = None,
        elector: LeaderElector | None = None,
    ) -> None:
        super().__init__(db, interval_s, elector=elector, holder=holder)
        self.db, self.clock, self.at, self.zone = db, clock, at, zone
        self.last_run: dict[str, object] | None = None

    async def run_once(self) -> None:
        now = self.clock.now()
        async with self.db.begin() as conn:
            if not await self.lead(conn, now=now):
                return
            last = await last_scheduled_start(conn)
        if last is not None and last >= latest_slot(now, self.zone, self.at):
            return
        try:
            self.last_run = await run_retention(
                self.db, now=now, trigger="scheduled", actor=SYSTEM_ACTOR
            )
        except RetentionRunning:
            log.info("retention_skipped", reason="a manual run is in progress")
            return
        log.info("retention_ran", rows=self.last_run["rowsRemoved"])


def retention_service(
    db: Database,
    clock: Clock,
    *,
    settings: Settings,
    elector: LeaderElector | None = None,
) -> DataRetention:
    """The service as configured by ``settings`` (the runtime's)."""
    hours, minutes = (int(p) for p in settings.retention_time_of_day.split(":"))
    name = settings.retention_time_zone or server_time_zone()
    try:
        zone = ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise ConfigurationError(
            f"unknown time zone {name!r}", field="FLOWLEDGER_RETENTION_TIME_ZONE"
        ) from exc
    return DataRetention(
        db,
        clock,
        interval_s=settings.retention_interval_s,
        at=time(hours, minutes),
        zone=zone,
        elector=elector,
    )
