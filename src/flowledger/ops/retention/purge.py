"""What each retention policy removes (SPEC O-20), as *steps*: a step counts
the rows it would remove (the preview) and removes one bounded batch inside
the caller's transaction (the run). Both use the same conditions, so a
preview equals the run that follows it on an unchanged database.

The job-ledger tables (jobs, attempts, receipts, worker registry) are
purged through the ledger driver the run holds (``jobs_purge_batch``,
``nodes_purge_batch``: :mod:`flowledger.ledger.driver.core_maintenance`),
handed to every step with its connection; the engine's own tables
(tokens, trace, outbox, subscription hits, health snapshots) here. Every
batch is keyset-paged (``id > after``, ordered by id, ``LIMIT batch``; the
jobs by their ``(updated_at, id)``, the order they expire in) and, on
PostgreSQL, selected ``FOR UPDATE`` (the status re-checked after a
concurrent writer commits). A batch of this module's tables is one
statement: ``DELETE … WHERE id`` among that locked, limited selection
(:func:`flowledger.db.portable.in_batch`) ``RETURNING id`` — no list of a
thousand ids sent back as a thousand parameters (issue 34: ~20 ms a
statement to bind, parse and plan).

Protection (never removed): anything of an instance that is running or
suspended or has a pending compensation ticket
(:func:`flowledger.ledger.driver.core_maintenance.instance_protected`);
tokens and trace only of terminal instances whose ``finished_at`` is before the cut-off.

Partitions (PostgreSQL): the ``workflow_jobs`` policy first drops the day
partitions of ``workflow_job_executions`` whose every row is past it
(``partitionsDropped``), then deletes the rest row by row; SQLite and an
unpartitioned table only take the row batches (issue 34 item 2).

Indexes (PostgreSQL): the keyset walks each table's primary key; instance
conditions are primary-key probes of ``workflow_instances`` and
``ix_workflow_compensations_instance``. Tokens and trace rows are only ever
removed once their instance finished before the cut-off, so they were
created before it: their walk ends at the last row created before the
cut-off (:func:`last_id_created_before`, a bisection of the primary key)
instead of visiting the months of newer rows (issue 34: on the volume
benchmark 15 s and 18 s of a 44 s pass).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Table, delete, exists, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from flowledger.db.compensation_schema import workflow_compensations as tickets
from flowledger.db.engine_schema import workflow_event_outbox as outbox
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.db.engine_schema import workflow_trace as trace
from flowledger.db.event_schema import workflow_subscription_hits as hits
from flowledger.db.health_schema import workflow_health_snapshots as snapshots
from flowledger.db.portable import in_batch
from flowledger.ledger.driver import LedgerDriver
from flowledger.ledger.driver.core_maintenance import instance_protected
from flowledger.ledger.driver.history_partitions import partition_drop_expired
from flowledger.states import TERMINAL_INSTANCE_STATUSES

Counts = dict[str, int]
BatchFn = Callable[
    [AsyncConnection, LedgerDriver, datetime, Any, int], Awaitable[tuple[Any, Counts]]
]
CountFn = Callable[[AsyncConnection, LedgerDriver, datetime], Awaitable[Counts]]


@dataclass(frozen=True)
class Step:
    """One table (or table family) of a policy."""

    count: CountFn
    batch: BatchFn
    start: Any = 0
    # False: a batch that removed nothing is not counted in the run's
    # batches (a step that only sometimes applies: the partition drop)
    counts_empty_batches: bool = True


def _finished_instance(instance_id: Any, before: datetime) -> ColumnElement[bool]:
    """The instance is terminal, finished before ``before`` and has no
    pending compensation ticket.

    Its finish is a correlated scalar subquery (NULL, so false, when the
    instance is not terminal or not there): PostgreSQL runs it as one
    primary-key probe per row, in the keyset walk's id order, so a batch
    stops after its ``LIMIT``. As an ``EXISTS`` it was planned as a hash join
    over every instance finished before the cut-off — all of history's, a
    set that only grows — built for every batch (issue 34: 230 ms of a
    1,000-row batch on the volume database, against 21 ms)."""
    finished_at = (
        select(instances.c.finished_at)
        .where(
            instances.c.id == instance_id,
            instances.c.status.in_([s.value for s in TERMINAL_INSTANCE_STATUSES]),
        )
        .scalar_subquery()
    )
    ticket = exists().where(tickets.c.instance_id == instance_id, tickets.c.status == "pending")
    return (finished_at < before) & ~ticket


def _unprotected(instance_id: Any) -> ColumnElement[bool]:
    return or_(instance_id.is_(None), ~instance_protected(instance_id))


async def last_id_created_before(conn: AsyncConnection, table: Table, before: datetime) -> int:
    """The largest ``id`` of ``table`` whose row was created before
    ``before`` (0: none), found by bisecting the primary key: rows are
    appended, so ``created_at`` grows with ``id``. About twenty one-row
    probes of the primary key, whatever the table's size. A row whose id and
    time disagree by a concurrent commit's few milliseconds at the cut-off
    is left for the next run; the step's own conditions still decide what
    goes, so a row is never removed because of this bound."""
    c = table.c

    async def first_from(low: int, high: int) -> tuple[int, datetime] | None:
        query = select(c.id, c.created_at).where(c.id >= low, c.id < high).order_by(c.id).limit(1)
        row = (await conn.execute(query)).first()
        return None if row is None else (int(row.id), row.created_at)

    edges = (await conn.execute(select(func.min(c.id), func.max(c.id)))).one()
    if edges[0] is None:
        return 0
    lo, hi = int(edges[0]), int(edges[1]) + 1
    first = await first_from(lo, hi)
    if first is None or first[1] >= before:
        return 0
    # invariant: the row ``lo`` was created before ``before``; none from ``hi`` on was
    while hi - lo > 1:
        mid = (lo + hi) // 2
        found = await first_from(mid, hi)
        if found is not None and found[1] < before:
            lo = found[0]
        else:
            hi = mid
    return lo


def _id_step(
    table: Table,
    where: Callable[[datetime], list[ColumnElement[bool]]],
    *,
    created_before_cutoff: bool = False,
) -> Step:
    """A step over one table with an integer ``id``. ``created_before_cutoff``:
    every row the step removes was created before the cut-off (tokens and
    trace of an instance finished before it), so the walk stops at
    :func:`last_id_created_before` — found once, in the step's first batch,
    and carried in the cursor ``(after, last)`` — instead of visiting every
    newer row."""

    async def last_of(conn: AsyncConnection, before: datetime) -> int | None:
        if not created_before_cutoff:
            return None
        return await last_id_created_before(conn, table, before)

    def bounded(before: datetime, last: int | None) -> list[ColumnElement[bool]]:
        return where(before) if last is None else [table.c.id <= last, *where(before)]

    async def count(conn: AsyncConnection, ledger: LedgerDriver, before: datetime) -> Counts:
        conditions = bounded(before, await last_of(conn, before))
        stmt = select(func.count()).select_from(table).where(*conditions)
        return {table.name: int((await conn.execute(stmt)).scalar_one())}

    async def batch(
        conn: AsyncConnection, ledger: LedgerDriver, before: datetime, after: Any, limit: int
    ) -> Any:
        cursor, last = after if isinstance(after, tuple) else (after, await last_of(conn, before))
        chosen = (
            select(table.c.id)
            .where(table.c.id > cursor, *bounded(before, last))
            .order_by(table.c.id)
            .limit(limit)
            .with_for_update()  # compiles to nothing on SQLite (its writer lock excludes)
            .scalar_subquery()
        )
        stmt = delete(table).where(in_batch(table.c.id, chosen)).returning(table.c.id)
        ids = list((await conn.execute(stmt)).scalars())
        if not ids:
            return None, {table.name: 0}
        return (max(ids), last), {table.name: len(ids)}

    return Step(count, batch)


TOKENS = _id_step(
    tokens,
    lambda before: [_finished_instance(tokens.c.instance_id, before)],
    created_before_cutoff=True,
)
TRACE = _id_step(
    trace,
    lambda before: [_finished_instance(trace.c.instance_id, before)],
    created_before_cutoff=True,
)
OUTBOX = _id_step(
    outbox,
    lambda before: [
        outbox.c.status == "dispatched",
        outbox.c.dispatched_at < before,
        _unprotected(outbox.c.instance_id),
    ],
)
HITS = _id_step(
    hits,
    lambda before: [
        hits.c.status == "delivered",
        hits.c.updated_at < before,
        _unprotected(hits.c.instance_id),
    ],
)


async def _jobs_count(conn: AsyncConnection, ledger: LedgerDriver, before: datetime) -> Counts:
    return await ledger.jobs_purge_count(conn, before=before)


async def _jobs_batch(
    conn: AsyncConnection, ledger: LedgerDriver, before: datetime, after: Any, limit: int
) -> Any:
    cursor = after if isinstance(after, tuple) else None  # the step's start: from the first
    purge = await ledger.jobs_purge_batch(conn, before=before, after=cursor, limit=limit)
    return purge.cursor, {
        "workflow_jobs": purge.jobs,
        "workflow_job_executions": purge.attempts,
        "workflow_job_effects": purge.receipts,
    }


async def _nodes_count(conn: AsyncConnection, ledger: LedgerDriver, before: datetime) -> Counts:
    return {"system_scheduler_nodes": await ledger.nodes_purge_count(conn, before=before)}


async def _nodes_batch(
    conn: AsyncConnection, ledger: LedgerDriver, before: datetime, after: Any, limit: int
) -> Any:
    removed = await ledger.nodes_purge_batch(conn, before=before, limit=limit)
    return (after if removed == limit else None), {"system_scheduler_nodes": removed}


# a step's counts may carry this key: the partitions it dropped (not rows)
PARTITIONS_DROPPED = "partitionsDropped"


async def _no_count(conn: AsyncConnection, ledger: LedgerDriver, before: datetime) -> Counts:
    """The partitions' rows are attempts of purgeable jobs: the jobs step's
    preview already counts them."""
    return {}


async def _partitions_batch(
    conn: AsyncConnection, ledger: LedgerDriver, before: datetime, after: Any, limit: int
) -> Any:
    """One partition of the attempts history (PostgreSQL, partitioned):
    dropped whole when every row of it is past the policy
    (:func:`flowledger.ledger.driver.history_partitions.partition_drop_expired`)."""
    cursor, dropped = await partition_drop_expired(
        conn, before=before, after=after if isinstance(after, datetime) else None
    )
    if dropped is None:
        return cursor, {}
    return cursor, {"workflow_job_executions": dropped.rows, PARTITIONS_DROPPED: 1}


# runs before the jobs' row batches, so that a day whose attempts are all
# expired goes as one DROP instead of row by row (issue 34 item 2)
ATTEMPT_PARTITIONS = Step(_no_count, _partitions_batch, counts_empty_batches=False)
JOBS = Step(_jobs_count, _jobs_batch)
NODES = Step(_nodes_count, _nodes_batch)


SNAPSHOTS = _id_step(
    snapshots, lambda before: [snapshots.c.taken_at < before]
)  # health snapshots (SPEC O-16) are engine-wide: nothing protects them


STEPS: dict[str, list[Step]] = {
    "workflow_tokens": [TOKENS],
    "system_scheduler_nodes": [NODES],
    "workflow_jobs": [ATTEMPT_PARTITIONS, JOBS],
    "workflow_trace": [TRACE],
    "workflow_event_outbox": [OUTBOX, HITS],
    "workflow_health_snapshots": [SNAPSHOTS],
}


async def policy_steps(conn: AsyncConnection, name: str) -> tuple[list[Step], str | None]:
    """The steps of policy ``name`` and, when it cannot run, why."""
    return STEPS[name], None
