"""Aggregates whose query differs in shape between PostgreSQL and SQLite —
percentiles, per-local-day counts and the distinct keys of JSON objects —
each one function taking the caller's connection and returning the same
numbers on both (issue 16: no dialect branch outside ``db/``; SPEC O-14,
L-23, O-2 use them).

- **Grouped percentiles** (:func:`grouped_stats`): PostgreSQL's
  ``percentile_cont`` (linear interpolation), over each group's values
  gathered by a hash aggregate (``array_agg``, then ``unnest``), in the same
  pass as the count and mean — about a third faster than
  ``percentile_cont``'s own group-by, which sorts every row by the text group
  keys first. When the caller names the rows of an index keyed by the group
  keys (``groups_where``), PostgreSQL instead walks that index's distinct
  keys (a loose index scan: a recursive CTE, one index descent per group)
  and aggregates each group over its own index range (a ``LATERAL``
  aggregate): no hash table, no arrays, each group's values read once. On
  SQLite one window-function query ranks each group's values
  (``row_number`` and ``count`` over the group) and returns, per group, the
  two values around position ``fraction * (n - 1)`` and the fraction between
  them; the interpolation is one multiplication per group, never per row.
- **Percentiles of an interval** (:func:`interval_percentiles`):
  ``percentile_cont`` on PostgreSQL; on SQLite the pairs of timestamps are
  read and :func:`percentile_cont` interpolates in Python (microsecond
  exact, as the stored text is).
- **Day buckets** in a time zone (:func:`count_by_local_day`): PostgreSQL
  counts each local day's range of the column (its UTC bounds from
  ``zoneinfo``), one index range count per day in one statement — no
  per-row ``timezone()`` (issue 34 item 3: 14 days are 3·10^5 rows). SQLite has no time zones, so it
  groups by 15-minute UTC buckets counted from the window's first local
  midnight (integer epoch seconds, so a row at exactly midnight falls on the
  right side) and Python adds each bucket (at most 96 a day, never one row
  per instance) to the local date of the bucket's start. Every UTC offset in
  use is a multiple of 15 minutes, so a bucket never straddles a local
  midnight.
- **JSON object keys** (:func:`distinct_json_keys`): ``jsonb_object_keys`` on
  PostgreSQL, the table-valued ``json_each`` on SQLite.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import Float, Integer, and_, cast, extract, func, select, true, tuple_
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from flowledger.db.dialects import POSTGRESQL, dialect_name

BUCKET_SECONDS = 900

Stats = dict[tuple[Any, ...], tuple[int, float | None, float | None]]


def percentile_cont(values: list[float], fraction: float) -> float | None:
    """PostgreSQL's ``percentile_cont``: linear interpolation between the two
    values around position ``fraction * (n - 1)`` of the sorted values."""
    if not values:
        return None
    ordered = sorted(values)
    position = fraction * (len(ordered) - 1)
    low, high = math.floor(position), math.ceil(position)
    return ordered[low] + (ordered[high] - ordered[low]) * (position - low)


async def grouped_stats(
    conn: AsyncConnection,
    keys: Sequence[ColumnElement[Any]],
    value: ColumnElement[Any],
    where: Sequence[ColumnElement[bool]],
    froms: Any,
    *,
    fraction: float = 0.9,
    groups_where: Sequence[ColumnElement[bool]] | None = None,
) -> Stats:
    """Per group of ``keys`` over the rows of ``froms`` matching ``where``:
    the count, mean and ``fraction`` percentile (continuous) of ``value``.
    One pass on PostgreSQL; an aggregate and a window query on SQLite.

    ``groups_where``: the partial predicate of an index whose leading
    columns are ``keys`` (NOT NULL columns of the one table ``froms``),
    met by every row matching ``where``. Given, PostgreSQL walks that
    index's distinct keys (one descent each) and aggregates each group over
    its own range of it, best when the index's next column is the one
    ``where`` bounds (a period). A filter on the keys belongs in ``where``
    only: the walk still visits every key (an equality on the first key
    beside the walk's row comparison would make each step scan the group it
    leaves), and a group it excludes costs one empty index probe. The
    planner must see the values (custom plans, as in the analytics read
    transaction) to prove a partial predicate. The numbers are the same
    either way; SQLite ignores it."""
    if dialect_name(conn) == POSTGRESQL:
        if groups_where is not None:
            return await _grouped_stats_pg_by_index(
                conn, keys, value, where, froms, fraction, groups_where
            )
        return await _grouped_stats_pg(conn, keys, value, where, froms, fraction)
    aggregate = (
        select(*keys, func.count(), func.avg(value))
        .select_from(froms)
        .where(*where)
        .group_by(*keys)
    )
    means = {tuple(r[: len(keys)]): (int(r[-2]), r[-1]) for r in await conn.execute(aggregate)}
    percentiles = await _grouped_percentile_sqlite(conn, keys, value, where, froms, fraction)
    return {k: (n, mean, percentiles.get(k)) for k, (n, mean) in means.items()}


def _labelled(keys: Sequence[ColumnElement[Any]]) -> list[Any]:
    """The group keys labelled ``k0``, ``k1`` … (a subquery's columns)."""
    return [k.label(f"k{i}") for i, k in enumerate(keys)]


async def _stats(conn: AsyncConnection, stmt: Any, n_keys: int) -> Stats:
    """Rows of (keys…, count, mean, percentile) as :data:`Stats`."""
    return {tuple(r[:n_keys]): (int(r[-3]), r[-2], r[-1]) for r in await conn.execute(stmt)}


async def _grouped_stats_pg(
    conn: AsyncConnection,
    keys: Sequence[ColumnElement[Any]],
    value: ColumnElement[Any],
    where: Sequence[ColumnElement[bool]],
    froms: Any,
    fraction: float,
) -> Stats:
    # a hash aggregate collects each group's values; the percentile then
    # sorts each group's array (floats) instead of a sort of every row
    # by the (text) group keys that percentile_cont's group-by needs
    labelled = _labelled(keys)
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
    percentile = select(func.percentile_cont(fraction).within_group(each.c.v)).scalar_subquery()
    stmt = select(
        *(groups.c[f"k{i}"] for i in range(len(keys))), groups.c.n, groups.c.mean, percentile
    )
    return await _stats(conn, stmt, len(keys))


async def _grouped_stats_pg_by_index(
    conn: AsyncConnection,
    keys: Sequence[ColumnElement[Any]],
    value: ColumnElement[Any],
    where: Sequence[ColumnElement[bool]],
    froms: Any,
    fraction: float,
    groups_where: Sequence[ColumnElement[bool]],
) -> Stats:
    # the distinct keys, smallest first: each step one descent of the index
    # to the first key after the previous one (ROW comparison, an index
    # condition); then, per group, count, mean and percentile over the
    # group's own range of the index (key equalities plus ``where``), the
    # value computed once per row (the OFFSET 0 subquery is not flattened)
    first = select(*_labelled(keys))
    first = first.select_from(froms).where(*groups_where).order_by(*keys).limit(1)
    groups = first.cte("g", recursive=True)
    bound = [groups.c[f"k{i}"] for i in range(len(keys))]
    following = (
        select(*keys)
        .select_from(froms)
        .where(*groups_where, tuple_(*keys) > tuple_(*bound))
        .order_by(*keys)
        .limit(1)
        .lateral("nxt")
    )
    groups = groups.union_all(select(*following.c).select_from(groups.join(following, true())))
    bound = [groups.c[f"k{i}"] for i in range(len(keys))]
    member = [k == b for k, b in zip(keys, bound, strict=True)]
    values = (
        select(value.label("v"))
        .select_from(froms)
        .where(*member, *where)
        .offset(0)
        .correlate(groups)
        .subquery("r")
    )
    stats = (
        select(
            func.count().label("n"),
            func.avg(values.c.v).label("mean"),
            func.percentile_cont(fraction).within_group(values.c.v).label("p"),
        )
        .select_from(values)
        .lateral("s")
    )
    stmt = (
        select(*bound, stats.c.n, stats.c.mean, stats.c.p)
        .select_from(groups.join(stats, true()))
        .where(stats.c.n > 0)
    )
    return await _stats(conn, stmt, len(keys))


async def _grouped_percentile_sqlite(
    conn: AsyncConnection,
    keys: Sequence[ColumnElement[Any]],
    value: ColumnElement[Any],
    where: Sequence[ColumnElement[bool]],
    froms: Any,
    fraction: float,
) -> dict[tuple[Any, ...], float]:
    labelled = _labelled(keys)
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
    position = fraction * (ranked.c.n - 1)
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


async def interval_percentiles(
    conn: AsyncConnection,
    start: Any,
    end: Any,
    where: Any,
    fractions: Sequence[float],
) -> list[float | None]:
    """The continuous percentiles ``fractions`` of ``end - start`` in
    milliseconds over the rows matching ``where`` (None: no rows)."""
    if dialect_name(conn) == POSTGRESQL:
        delay = cast(extract("epoch", end - start) * 1000, Float)
        row = (
            await conn.execute(
                select(*(func.percentile_cont(f).within_group(delay) for f in fractions)).where(
                    where
                )
            )
        ).one()
        return [None if v is None else float(v) for v in row]
    rows = await conn.execute(select(start, end).where(where))
    delays = [(r[1] - r[0]).total_seconds() * 1000 for r in rows]
    return [percentile_cont(delays, f) for f in fractions]


def _local_days(
    zone: ZoneInfo, start: datetime, end: datetime
) -> list[tuple[date, datetime, datetime]]:
    """Each local date from ``start`` (a local midnight) to ``end`` with the
    UTC instants of its midnight and the next one's."""
    days: list[tuple[date, datetime, datetime]] = []
    day = start.astimezone(zone).date()
    while True:
        low = datetime.combine(day, datetime.min.time(), zone)
        if low >= end:
            return days
        high = datetime.combine(day + timedelta(days=1), datetime.min.time(), zone)
        days.append((day, low.astimezone(UTC), min(high, end).astimezone(UTC)))
        day += timedelta(days=1)


async def count_by_local_day(
    conn: AsyncConnection,
    column: Any,
    where: Sequence[ColumnElement[bool]],
    *,
    zone: ZoneInfo,
    start: datetime,
    end: datetime,
) -> dict[date, int]:
    """Rows with ``start <= column < end`` matching ``where``, counted per
    local date of ``column`` in ``zone`` (``start`` a local midnight)."""
    bounds = and_(column >= start, column < end, *where)
    if dialect_name(conn) == POSTGRESQL:
        # one index range count per local day (its UTC bounds from zoneinfo,
        # so a DST day has its 23 or 25 hours): no per-row time-zone
        # conversion, and each count an index-only range of ``column``
        days = _local_days(zone, start, end)
        per_day = [
            select(func.count())
            .where(column >= low, column < high, *where)
            .scalar_subquery()
            .label(f"d{i}")
            for i, (_day, low, high) in enumerate(days)
        ]
        if not per_day:
            return {}
        row = (await conn.execute(select(*per_day))).one()
        return {day: int(n) for (day, _low, _high), n in zip(days, row, strict=True) if n}
    epoch = cast(func.strftime("%s", column), Integer)
    bucket = (epoch - int(start.timestamp())) // BUCKET_SECONDS
    stmt = select(bucket.label("bucket"), func.count()).where(bounds).group_by(bucket)
    counts: dict[date, int] = {}
    for r in await conn.execute(stmt):
        local = (start + timedelta(seconds=int(r.bucket) * BUCKET_SECONDS)).astimezone(zone)
        counts[local.date()] = counts.get(local.date(), 0) + int(r[1])
    return counts


async def distinct_json_keys(conn: AsyncConnection, column: Any, *, limit: int) -> list[str]:
    """The distinct top-level keys of the JSON objects in ``column`` (a column
    of a subquery), sorted, at most ``limit``, in one query."""
    keys: ColumnElement[Any]
    if dialect_name(conn) == POSTGRESQL:
        keys = func.jsonb_object_keys(column)
        query = select(keys.label("key")).select_from(column.table).distinct()
    else:
        each = func.json_each(column).table_valued("key")
        query = select(each.c.key).select_from(column.table).join(each, true()).distinct()
        keys = each.c.key
    found = (await conn.execute(query.order_by(keys).limit(limit))).scalars().all()
    return [str(k) for k in found]
