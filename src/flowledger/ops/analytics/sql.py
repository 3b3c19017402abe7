"""Helpers of the analytics read models (SPEC O-14): the analytics scope
(tenants and a definition filter), the panel's read transaction with its
PostgreSQL planner settings, whole milliseconds and the window of local
dates. The SQL that differs by dialect — durations, grouped percentiles and
time-zone day buckets, each the same number on PostgreSQL and SQLite — is in
``db/`` (:func:`flowledger.db.portable.milliseconds_between`,
:mod:`flowledger.db.aggregates`); durations are rounded to whole
milliseconds in the result.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.planner import set_local

WORK_MEM = "64MB"


@dataclass(frozen=True)
class AnalyticsScope:
    """What a panel may see: the caller's tenants (None: every tenant) and an
    optional definition key."""

    tenants: tuple[str, ...] | None = None
    definition_key: str | None = None

    def tenant_filter(self, column: Any) -> list[ColumnElement[bool]]:
        return [] if self.tenants is None else [column.in_(self.tenants)]

    def instance_filter(self) -> list[ColumnElement[bool]]:
        """Tenant and definition conditions on ``workflow_instances``."""
        where = self.tenant_filter(instances.c.tenant_id)
        if self.definition_key is not None:
            where.append(instances.c.definition_key == self.definition_key)
        return where


@asynccontextmanager
async def analytics_read(db: Database) -> AsyncIterator[AsyncConnection]:
    """A read-only transaction for one panel. On PostgreSQL, for this
    transaction only:

    - it may sort in memory (``work_mem`` 64 MB): the p90 and the group-bys
      of a large period sort some 10^5 rows, which spill to disk at the
      default 4 MB;
    - every statement gets a plan for its own values
      (``plan_cache_mode = force_custom_plan``). The driver prepares each
      statement, and after five runs PostgreSQL may switch to a generic plan:
      with ``status = $1`` it cannot prove a partial index's predicate, and it
      guesses a period holds 0.5 % of the rows, so the node-bottleneck query
      became a parallel sequential scan plus a sort of every completed task
      by the group keys (~245 ms instead of ~110 ms at 100,000 instances).
      Planning one panel's statement takes well under a millisecond;
    - no JIT compilation (``jit = off``): a panel's statement reads at most
      some 10^5 index entries (issue 34 item 3), and compiling it took
      8 to 50 ms of a budget of 100.
    """
    async with db.read() as conn:
        await set_local(conn, work_mem=WORK_MEM, plan_cache_mode="force_custom_plan", jit="off")
        yield conn


def ms(value: Any) -> int | None:
    return None if value is None else round(float(value))


def day_window(now: datetime, zone: ZoneInfo, days: int) -> tuple[list[date], datetime, datetime]:
    """The last ``days`` local dates up to today in ``zone`` (oldest first)
    and the UTC instants of the first one's midnight and tomorrow's."""
    today = now.astimezone(zone).date()
    dates = [today - timedelta(days=days - 1 - i) for i in range(days)]
    start = datetime.combine(dates[0], datetime.min.time(), zone)
    end = datetime.combine(today + timedelta(days=1), datetime.min.time(), zone)
    return dates, start.astimezone(ZoneInfo("UTC")), end.astimezone(ZoneInfo("UTC"))
