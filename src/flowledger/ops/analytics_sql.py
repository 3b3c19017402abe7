"""Dialect helpers of the analytics read models (SPEC O-14): the analytics
scope (tenants and a definition filter), durations between two timestamps,
grouped 90th percentiles and time-zone day buckets — each the same number on
PostgreSQL and SQLite.

- **Durations** are milliseconds: ``date_part('epoch', b - a) * 1000`` on
  PostgreSQL, ``(julianday(b) - julianday(a)) * 86400000`` on SQLite (our
  timestamps are ISO text there), rounded to whole milliseconds in the result.
- **p90** is PostgreSQL's ``percentile_cont(0.9)`` (linear interpolation),
  over each group's values gathered by a hash aggregate (``array_agg``,
  then ``unnest``), in the same pass as the count and mean — about a third
  faster than ``percentile_cont``'s own group-by, which sorts every row by
  the text group keys first. On
  SQLite one window-function query ranks each group's durations
  (``row_number`` and ``count`` over the group) and returns, per group, the
  two values around position ``0.9 * (n - 1)`` and the fraction between them;
  the interpolation is one multiplication per group, never per row.
- **Day buckets** in a time zone: PostgreSQL groups by
  ``date(timezone(tz, ts))``. SQLite has no time zones, so it groups by
  15-minute UTC buckets counted from the window's first local midnight
  (integer epoch seconds, so a row at exactly midnight falls on the right
  side) and Python adds each bucket (at most 96 a day, never one row per
  instance) to the local date of the bucket's start. Every UTC offset in use
  is a multiple of 15 minutes, so a bucket never straddles a local midnight.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Float, Integer, and_, cast, func, select, text
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances as instances

BUCKET_SECONDS = 900
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
      Planning one panel's statement takes well under a millisecond.
    """
    async with db.read() as conn:
        if conn.dialect.name == "postgresql":
            await conn.execute(
                text(
                    "SELECT set_config('work_mem', :work_mem, true),"
                    " set_config('plan_cache_mode', 'force_custom_plan', true)"
                ),
                {"work_mem": WORK_MEM},
            )
        yield conn


def duration_ms(conn: AsyncConnection, start: Any, end: Any) -> ColumnElement[Any]:
    """Milliseconds from ``start`` to ``end`` as a float expression
    (``date_part`` is double precision; ``extract`` would be numeric, several
    times slower to average and sort)."""
    if conn.dialect.name == "postgresql":
        return cast(func.date_part("epoch", end - start), Float) * 1000.0
    return (func.julianday(end) - func.julianday(start)) * 86_400_000.0


def ms(value: Any) -> int | None:
    return None if value is None else round(float(value))


Stats = dict[tuple[Any, ...], tuple[int, float | None, float | None]]


async def grouped_stats(
    conn: AsyncConnection,
    keys: Sequence[ColumnElement[Any]],
    value: ColumnElement[Any],
    where: Sequence[ColumnElement[bool]],
    froms: Any,
) -> Stats:
    """Per group of ``keys`` over the rows of ``froms`` matching ``where``:
    the count, mean and 90th percentile (continuous) of ``value``. One pass
    on PostgreSQL; an aggregate and a window query on SQLite."""
    if conn.dialect.name == "postgresql":
        # a hash aggregate collects each group's values; the percentile then
        # sorts each group's array (floats) instead of a sort of every row
        # by the (text) group keys that percentile_cont's group-by needs
        labelled = [k.label(f"k{i}") for i, k in enumerate(keys)]
        groups = (
            select(
                *labelled,
                func.count().label("n"),
                func.avg(value).label("mean"),
                func.array_agg(value).label("values"),
            )
            .select_from(froms)
            .where(*where)
            .group_by(*keys)
            .subquery()
        )
        each = func.unnest(groups.c["values"]).table_valued("v").render_derived(name="u")
        p90 = select(func.percentile_cont(0.9).within_group(each.c.v)).scalar_subquery()
        stmt = select(
            *(groups.c[f"k{i}"] for i in range(len(keys))), groups.c.n, groups.c.mean, p90
        )
        return {tuple(r[: len(keys)]): (int(r[-3]), r[-2], r[-1]) for r in await conn.execute(stmt)}
    aggregate = (
        select(*keys, func.count(), func.avg(value))
        .select_from(froms)
        .where(*where)
        .group_by(*keys)
    )
    means = {tuple(r[: len(keys)]): (int(r[-2]), r[-1]) for r in await conn.execute(aggregate)}
    p90s = await _sqlite_p90(conn, keys, value, where, froms)
    return {k: (n, mean, p90s.get(k)) for k, (n, mean) in means.items()}


async def _sqlite_p90(
    conn: AsyncConnection,
    keys: Sequence[ColumnElement[Any]],
    value: ColumnElement[Any],
    where: Sequence[ColumnElement[bool]],
    froms: Any,
) -> dict[tuple[Any, ...], float]:
    labelled = [k.label(f"k{i}") for i, k in enumerate(keys)]
    ranked = (
        select(
            *labelled,
            value.label("v"),
            (func.row_number().over(partition_by=keys, order_by=value) - 1).label("rn"),
            func.count().over(partition_by=keys).label("n"),
        )
        .select_from(froms)
        .where(*where)
        .subquery()
    )
    position = 0.9 * (ranked.c.n - 1)
    low = cast(position, Integer)
    high = low + cast(position > low, Integer)
    group = [ranked.c[f"k{i}"] for i in range(len(keys))]
    stmt = select(
        *group,
        func.min(func.iif(ranked.c.rn == low, ranked.c.v, None)).label("lo"),
        func.min(func.iif(ranked.c.rn == high, ranked.c.v, None)).label("hi"),
        func.min(position - low).label("frac"),
    ).group_by(*group)
    result: dict[tuple[Any, ...], float] = {}
    for r in await conn.execute(stmt):
        result[tuple(r[: len(keys)])] = float(r.lo) + (float(r.hi) - float(r.lo)) * float(r.frac)
    return result


def day_window(now: datetime, zone: ZoneInfo, days: int) -> tuple[list[date], datetime, datetime]:
    """The last ``days`` local dates up to today in ``zone`` (oldest first)
    and the UTC instants of the first one's midnight and tomorrow's."""
    today = now.astimezone(zone).date()
    dates = [today - timedelta(days=days - 1 - i) for i in range(days)]
    start = datetime.combine(dates[0], datetime.min.time(), zone)
    end = datetime.combine(today + timedelta(days=1), datetime.min.time(), zone)
    return dates, start.astimezone(ZoneInfo("UTC")), end.astimezone(ZoneInfo("UTC"))


async def count_by_local_day(
    conn: AsyncConnection,
    column: Any,
    where: Sequence[ColumnElement[bool]],
    *,
    zone: ZoneInfo,
    start: datetime,
    end: datetime,
) -> dict[date, int]:
    """Rows of ``workflow_instances`` with ``start <= column < end`` matching
    ``where``, counted per local date of ``column`` in ``zone``."""
    bounds = and_(column >= start, column < end, *where)
    if conn.dialect.name == "postgresql":
        day = func.date(func.timezone(zone.key, column))
        stmt = select(day.label("day"), func.count()).where(bounds).group_by(day)
        return {r.day: int(r[1]) for r in await conn.execute(stmt)}
    epoch = cast(func.strftime("%s", column), Integer)
    bucket = (epoch - int(start.timestamp())) // BUCKET_SECONDS
    stmt = select(bucket.label("bucket"), func.count()).where(bounds).group_by(bucket)
    counts: dict[date, int] = {}
    for r in await conn.execute(stmt):
        local = (start + timedelta(seconds=int(r.bucket) * BUCKET_SECONDS)).astimezone(zone)
        counts[local.date()] = counts.get(local.date(), 0) + int(r[1])
    return counts
