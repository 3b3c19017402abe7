"""Enqueue (SPEC L-1, L-12, L-15): write pending parent jobs inside the
caller's transaction and publish the pool's wake hint on commit — delegated
to the ledger driver (``job_insert`` / ``jobs_insert``).

The public Python API of enqueueing: :func:`enqueue` for one job,
:func:`enqueue_bulk` for many (see "Enqueueing jobs" in ``docs/ledger.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.ledger.driver import ledger_for
from flowledger.ledger.models import EnqueueResult, JobSpec, new_key
from flowledger.ledger.types import JobTypeRegistry

__all__ = ["EnqueueResult", "JobSpec", "enqueue", "enqueue_bulk", "enqueue_many", "new_key"]


async def enqueue(
    conn: AsyncConnection,
    spec: JobSpec,
    *,
    now: datetime,
    job_types: JobTypeRegistry | None = None,
) -> EnqueueResult:
    """Enqueue one job in the caller's transaction; an idempotencyKey that
    already names a job returns that job with ``created=False``. A spec whose
    type is a name is resolved with ``job_types`` (refused without one)."""
    return await ledger_for(conn).job_insert(conn, spec, now=now, job_types=job_types)


async def enqueue_bulk(
    conn: AsyncConnection,
    specs: Sequence[JobSpec],
    *,
    now: datetime,
    job_types: JobTypeRegistry | None = None,
) -> list[EnqueueResult]:
    """Enqueue many jobs in the caller's transaction, in a few statements.

    A spec's type is its :class:`~flowledger.ledger.types.JobType`, or a
    name that ``job_types`` knows. Each row is exactly what :func:`enqueue`
    would write for its spec, and
    the answer is one :class:`EnqueueResult` per spec, in order, exactly as
    calling :func:`enqueue` for each spec in turn would give: an
    idempotencyKey that already names a job — in the table, committed by a
    concurrent transaction, or used by an earlier spec of the same call —
    gives that job's id with ``created=False`` and writes nothing. Ids of new
    jobs ascend in spec order. Jobs become visible, and each pool that got a
    new job receives one wake hint, when the transaction commits; a rollback
    leaves nothing.

    PostgreSQL: one ``INSERT … SELECT FROM unnest(…)`` per call (fixed text,
    prepared once). SQLite: multi-row inserts of up to 1,000 rows. Either way,
    one more look-up when some key was already taken. Call it with batches of
    a few thousand specs; a transaction holding many more keeps its locks
    (on SQLite: the database's write lock) for as long as it runs.
    """
    return await ledger_for(conn).jobs_insert(conn, specs, now=now, job_types=job_types)


async def enqueue_many(
    conn: AsyncConnection,
    specs: Sequence[JobSpec],
    *,
    now: datetime,
    job_types: JobTypeRegistry | None = None,
) -> list[int]:
    """:func:`enqueue_bulk` answering only the job ids (kept for existing callers)."""
    results = await enqueue_bulk(conn, specs, now=now, job_types=job_types)
    return [result.job_id for result in results]
