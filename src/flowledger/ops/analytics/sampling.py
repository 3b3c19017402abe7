"""Exact or sampled: how a panel's aggregate stays cheap with months of
history (issue 34 item 3; SPEC O-14).

An analytics figure over a period (handled tasks of 30 days, instances
started in 30 days) or over all history (the average duration of every
finished instance) reads every matching row, and at 90 days of history
that is 10^6 rows — seconds on a small machine, and no index makes an
average or a percentile of a million values cheap. Like the counts of
:mod:`flowledger.db.count_estimates`, such a figure is then an estimate,
and says so:

1. :func:`sampling_for` asks the planner what reading the matching rows
   would cost (``EXPLAIN``, no row read). At most
   :data:`~flowledger.db.count_estimates.EXACT_COST_LIMIT` (or on SQLite):
   ``None``, and the panel runs its exact query.
2. Above it, the panel runs the *same* statement over a block sample of
   the table (``TABLESAMPLE SYSTEM (p) REPEATABLE (0)``): about
   :data:`PAGE_BUDGET` of the table's pages, the same pages at every call
   (so a refresh shows the same figures, and they stay cached).
   :meth:`Sampling.over` rewrites the statement onto the sample
   (SQLAlchemy's ``ClauseAdapter``); averages and percentiles are the
   sample's; a group's count is its share of the sample times the
   planner's estimate of the matching rows (:meth:`Sampling.scale`).
3. The panel marks the figures that are estimates (``estimated``) and the
   console prints them as ``≈ n``. An estimate is never shown as exact.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, TypeVar

from sqlalchemy import Select, Table, func, literal
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ClauseElement
from sqlalchemy.sql.selectable import TableSample
from sqlalchemy.sql.util import ClauseAdapter

from flowledger.db import count_estimates
from flowledger.db.count_estimates import planned_here, table_pages

PAGE_BUDGET = 600
"""Heap pages a sampled figure reads (8 kB each: under 5 MB), whatever the
table's size. On a table of more than 60,000 pages (the ones that need a
sample: 500 MB) that is under 1 % of it, below which PostgreSQL's SYSTEM
sample reads through shared buffers rather than a bulk-read ring — the
sample's pages stay cached from one call to the next."""

SEED = 0
"""``REPEATABLE`` seed: the same sample pages at every call."""

T = TypeVar("T", bound=ClauseElement)


@dataclass(frozen=True)
class Sampling:
    """A block sample of one table: ``percent`` of its pages (``sample``,
    one FROM item however many expressions read it), and ``rows``, the
    planner's estimate of the rows the exact statement would read."""

    table: Table
    percent: float
    rows: int
    sample: TableSample

    @classmethod
    def of(cls, table: Table, percent: float, rows: int) -> Sampling:
        sample = table.tablesample(
            func.system(percent), name=f"sampled_{table.name}", seed=literal(SEED)
        )
        return cls(table, percent, rows, sample)

    def over(self, element: T) -> T:
        """``element`` (a statement or an expression) reading the sample
        instead of the table."""
        return ClauseAdapter(self.sample).traverse(element)

    def scale(self, count: Any, sampled: Any) -> int:
        """A group's ``count`` of the ``sampled`` matching rows of the
        sample, scaled to the table: its share of the planner's ``rows``.
        The planner's estimate of a period's rows (a histogram of the
        bounded column) is steadier than the sample's own count: rows are
        stored in time order, so how many of the sampled pages fall in the
        period varies from one sample to another. A sample of the whole
        table (a small one) is the table: its counts are the counts."""
        if self.percent >= 100.0:
            return int(count)
        return round(int(count) * self.rows / int(sampled)) if sampled else 0


async def sampling_for(
    conn: AsyncConnection, table: Table, rows: Select[Any], *, exact_cost_limit: float | None = None
) -> Sampling | None:
    """None when reading ``rows`` (a filtered ``SELECT`` of ``table``) costs
    at most the exact-cost limit (default
    :data:`~flowledger.db.count_estimates.EXACT_COST_LIMIT`, read at each
    call) or on SQLite; else the sample that replaces the table."""
    limit = count_estimates.EXACT_COST_LIMIT if exact_cost_limit is None else exact_cost_limit
    bare = rows.with_only_columns(literal(1), maintain_column_froms=True)
    plan = await planned_here(conn, bare)
    if plan is None or plan.cost <= limit:
        return None
    pages = await table_pages(conn, table)
    percent = min(100.0, round(100.0 * PAGE_BUDGET / float(pages), 4))
    return Sampling.of(table, percent, plan.rows)
