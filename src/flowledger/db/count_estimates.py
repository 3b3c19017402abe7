"""Counts per group that stay cheap with months of history (issue 34 item 3):
the console's status badges and the job summary count every matching row,
and at millions of terminal rows an exact ``count(*)`` reads millions of
index entries. Like Oban Web, a figure that would cost that much is the
query planner's estimate instead, and it says so.

One mechanism, :func:`counts_by`, for every grouped count of a filtered
table:

1. On PostgreSQL it asks the planner, per group value, what reading the
   matching rows would cost (``EXPLAIN (FORMAT JSON)`` of the filtered rows
   with ``column = value``: its ``Total Cost`` and its ``Plan Rows``). Each
   ``EXPLAIN`` plans the statement and reads no rows.
2. The values the planner expects at most :data:`EXACT_ROW_LIMIT` rows of,
   at a cost of at most :data:`EXACT_COST_LIMIT`, are counted exactly,
   together, in one ``GROUP BY`` query (``column IN (…)``) — a state with a
   few hundred rows (``failed``, ``running``) is always exact.
3. The others report the planner's row estimate and are named in
   :attr:`GroupCounts.estimated`; the API marks them (``estimated``) and the
   console prints them as ``≈ n``. An estimate is never shown as exact.

A count that only matters up to a bound (a replay submits at most its
``limit``) counts that far exactly (:func:`count_up_to`) and estimates
beyond it.

A breakdown of an estimated group by a second column (the job summary's
statuses per type) takes its groups from the planner's statistics
(:func:`frequent_values`) and each figure from :func:`estimated_rows`,
counting the cells expected to be small (the planner puts at least one row
in any group it cannot rule out, so a small group is counted, not
estimated).

A planner that underestimates (statistics older than a burst of rows)
leads to an exact count that is slower than the limit, never to a wrong
figure shown as exact. On SQLite (the embedded default, small by
construction) every count is exact.

The limits are set so that the exact part of a read stays within a few
tens of milliseconds on a small machine: counting 10,000 rows through a
status index takes ~10 to 25 ms on the 2-core dev machine (measured on the
volume benchmark's 12M jobs: 8,724 running jobs 23 ms, 64,592 pending
116 ms, 235,209 canceled 209 ms). The row limit alone does not bound a
plan that filters many rows to find few (a keyword, a form field), so the
cost limit (planner units, one sequential page read = 1) guards those.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Column, ColumnElement, Select, Table, func, literal, select, text
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.sql.expression import ClauseElement, Executable

from flowledger.db.dialects import POSTGRESQL, dialect_name

EXACT_ROW_LIMIT = 10_000
EXACT_COST_LIMIT = 10_000.0


class Explain(Executable, ClauseElement):
    """``EXPLAIN (FORMAT JSON) <statement>``: the plan of a statement with its
    parameters bound as the statement binds them (SQLAlchemy's compiler
    extension, the documented way to add a construct)."""

    inherit_cache = False

    def __init__(self, statement: Select[Any]) -> None:
        self.statement = statement


@compiles(Explain, "postgresql")
def _explain_postgresql(element: Explain, compiler: SQLCompiler, **kw: Any) -> str:
    return "EXPLAIN (FORMAT JSON) " + compiler.process(element.statement, **kw)


@dataclass(frozen=True)
class PlanFigures:
    """What the planner expects of a statement: its total cost and rows."""

    cost: float
    rows: int


async def planned_here(conn: AsyncConnection, statement: Select[Any]) -> PlanFigures | None:
    """The planner's figures for ``statement`` on PostgreSQL; None on SQLite
    (whose reads are always exact: the embedded default is small)."""
    if dialect_name(conn) != POSTGRESQL:
        return None
    return await planned(conn, statement)


async def table_pages(conn: AsyncConnection, table: Table) -> int:
    """How many 8 KiB pages ``table`` holds now (PostgreSQL), at least 1."""
    size = text("SELECT greatest(pg_relation_size(CAST(:table AS regclass)) / 8192, 1)")
    return int((await conn.execute(size, {"table": table.name})).scalar_one())


async def planned(conn: AsyncConnection, statement: Select[Any]) -> PlanFigures:
    """The planner's figures for ``statement`` (PostgreSQL only; no row is read)."""
    raw = (await conn.execute(Explain(statement))).scalar_one()
    plan = (json.loads(raw) if isinstance(raw, str) else raw)[0]["Plan"]
    return PlanFigures(cost=float(plan["Total Cost"]), rows=int(plan["Plan Rows"]))


def _bare(rows: Select[Any]) -> Select[Any]:
    """``rows`` returning a constant: its plan is the cost of finding them."""
    return rows.with_only_columns(literal(1), maintain_column_froms=True)


@dataclass(frozen=True)
class GroupCounts:
    """Rows per group value (every value asked for, zeros included) and the
    values whose figure is the planner's estimate rather than a count."""

    counts: dict[str, int]
    estimated: frozenset[str] = field(default_factory=frozenset)

    @property
    def total(self) -> int:
        return sum(self.counts.values())


async def counts_by(
    conn: AsyncConnection,
    rows: Select[Any],
    column: ColumnElement[Any],
    values: Sequence[str],
    *,
    exact_cost_limit: float | None = None,
) -> GroupCounts:
    """How many of ``rows`` (a filtered ``SELECT`` of one table) have each of
    ``values`` in ``column``: exact where counting is cheap, else the
    planner's estimate, named in :attr:`GroupCounts.estimated`. The limit
    defaults to :data:`EXACT_COST_LIMIT`, read at each call."""
    limit = EXACT_COST_LIMIT if exact_cost_limit is None else exact_cost_limit
    counts = dict.fromkeys(values, 0)
    exact = list(values)
    estimated: set[str] = set()
    if dialect_name(conn) == POSTGRESQL:
        exact = []
        for value in values:
            figures = await planned(conn, _bare(rows).where(column == value))
            if figures.cost <= limit and figures.rows <= EXACT_ROW_LIMIT:
                exact.append(value)
            else:
                counts[value] = figures.rows
                estimated.add(value)
    if exact:
        grouped = (
            rows.with_only_columns(column, func.count(), maintain_column_froms=True)
            .where(column.in_(exact))
            .group_by(column)
        )
        for value, n in (await conn.execute(grouped)).all():
            counts[str(value)] = int(n)
    return GroupCounts(counts, frozenset(estimated))


async def count_up_to(conn: AsyncConnection, rows: Select[Any], bound: int) -> tuple[int, bool]:
    """How many rows ``rows`` returns and whether that is an estimate: counted
    exactly up to ``bound`` (an index walk that stops there); past it, the
    planner's estimate (at least ``bound + 1``) when it expects more than
    :data:`EXACT_ROW_LIMIT` rows on PostgreSQL, else an exact count."""
    bounded = _bare(rows).limit(bound + 1).subquery()
    n = int((await conn.execute(select(func.count()).select_from(bounded))).scalar_one())
    if n <= bound:
        return n, False
    if dialect_name(conn) == POSTGRESQL:
        expected = await estimated_rows(conn, rows)
        if expected > EXACT_ROW_LIMIT:
            return max(expected, n), True
    counted = select(func.count()).select_from(_bare(rows).subquery())
    return int((await conn.execute(counted)).scalar_one()), False


async def estimated_rows(conn: AsyncConnection, rows: Select[Any]) -> int:
    """The planner's estimate of how many rows ``rows`` returns (PostgreSQL)."""
    return (await planned(conn, _bare(rows))).rows


async def frequent_values(conn: AsyncConnection, column: Column[Any]) -> list[str]:
    """The most common values of a text column as the planner's statistics
    know them (``pg_stats.most_common_vals``; PostgreSQL, after ``ANALYZE``):
    the groups an estimated breakdown is split into, e.g. the job types of
    an estimated status."""
    query = text(
        "SELECT most_common_vals::text::text[] FROM pg_stats"
        " WHERE schemaname = current_schema() AND tablename = :table AND attname = :column"
    )
    found = (await conn.execute(query, {"table": column.table.name, "column": column.name})).all()
    return sorted({str(v) for (values,) in found for v in (values or [])})
