"""The event outbox seen from the dispatch side (SPEC E-10, X-5): which rows
are pending, taking a batch of them, marking them, and making sure one
``event_dispatch`` job exists while rows wait.

One job at a time, without coordination between workers: the job for the
oldest pending row ``E`` has the idempotency key ``event_dispatch:E``, so
every worker (and the job finishing a full batch) that sees the same oldest
row enqueues the same job once (L-15). If the job named by that key has
already ended — succeeded, canceled, dead — while ``E`` is still pending,
the next key in the chain is ``event_dispatch:E:after:<that job's id>``:
again the same for everyone, so a stuck or failed job never blocks the
outbox for good, and at most one new job per ended job is created. The chain
gives up after :data:`MAX_CHAIN` ended jobs for one row (an operator looks:
SPEC O-12 "event dispatch failed").
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy import ColumnElement, Update, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_event_outbox as outbox
from flowledger.db.portable import in_batch
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import JobSpec
from flowledger.ledger.types import JobType
from flowledger.states import JobStatus, Pool

log = structlog.get_logger("flowledger.events")

EVENT_DISPATCH = "event_dispatch"
EVENT_DISPATCH_TYPE = JobType(EVENT_DISPATCH, Pool.OUTBOUND, max_attempts=10)
MAX_CHAIN = 10
_ACTIVE = frozenset({JobStatus.PENDING, JobStatus.RUNNING, JobStatus.PAUSED})
_ORDER = (outbox.c.created_at, outbox.c.id)


async def oldest_pending(conn: AsyncConnection) -> int | None:
    """The id of the oldest pending outbox row (one query on the status index)."""
    query = select(outbox.c.id).where(outbox.c.status == "pending").order_by(*_ORDER).limit(1)
    found = (await conn.execute(query)).scalar_one_or_none()
    return None if found is None else int(found)


async def dispatch_job_key(conn: AsyncConnection, oldest_id: int) -> str | None:
    """The idempotency key of the job that should dispatch from ``oldest_id``,
    or None when a job for it is already waiting or running (or the chain is
    exhausted)."""
    key = f"{EVENT_DISPATCH}:{oldest_id}"
    for _ in range(MAX_CHAIN):
        row = (
            await conn.execute(
                select(jobs.c.id, jobs.c.status).where(jobs.c.idempotency_key == key)
            )
        ).first()
        if row is None:
            return key
        if row.status in _ACTIVE:
            return None
        key = f"{EVENT_DISPATCH}:{oldest_id}:after:{row.id}"
    log.warning("event_dispatch_chain_exhausted", event_id=oldest_id)
    return None


async def ensure_dispatch_job(
    conn: AsyncConnection, *, now: datetime, ledger: LedgerDriver
) -> int | None:
    """Enqueue the ``event_dispatch`` job for the oldest pending row unless
    one is waiting or running; returns the new job's id (None: nothing to do)."""
    oldest = await oldest_pending(conn)
    if oldest is None:
        return None
    key = await dispatch_job_key(conn, oldest)
    if key is None:
        return None
    result = await ledger.job_insert(
        conn,
        JobSpec(type=EVENT_DISPATCH_TYPE, payload={"fromEventId": oldest}, idempotency_key=key),
        now=now,
    )
    return result.job_id if result.created else None


async def take_pending(conn: AsyncConnection, limit: int) -> list[dict[str, Any]]:
    """Lock and return the oldest pending rows (SKIP LOCKED on PostgreSQL, so
    concurrent dispatchers take disjoint batches; SQLite has one writer)."""
    query = (
        select(outbox)
        .where(outbox.c.status == "pending")
        .order_by(*_ORDER)
        .limit(limit)
        .with_for_update(skip_locked=True)
    )
    return [dict(r) for r in (await conn.execute(query)).mappings().all()]


def unheard_update(limit: int, *, now: datetime, nobody_listens: ColumnElement[bool]) -> Update:
    """The statement of :func:`settle_unheard`: the batch found by the pending
    index, its rows by primary key (:func:`~flowledger.db.portable.in_batch`)."""
    batch = (
        select(outbox.c.id)
        .where(outbox.c.status == "pending")
        .order_by(*_ORDER)
        .limit(limit)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    return (
        update(outbox)
        .where(in_batch(outbox.c.id, batch), nobody_listens)
        .values(status="dispatched", dispatched_at=now)
        .returning(outbox.c.id)
    )


async def settle_unheard(
    conn: AsyncConnection, limit: int, *, now: datetime, nobody_listens: ColumnElement[bool]
) -> list[int]:
    """Mark the oldest pending rows (at most ``limit``; SKIP LOCKED on
    PostgreSQL) ``dispatched`` in one statement when ``nobody_listens`` holds
    in that statement's snapshot, and return their ids; none while anyone
    listens (the caller then fans out row by row). The check and the rows'
    locks are one statement, so a listener committed before it is seen."""
    query = unheard_update(limit, now=now, nobody_listens=nobody_listens)
    return [int(i) for i in (await conn.execute(query)).scalars()]


async def mark(conn: AsyncConnection, ids: Sequence[int], status: str, *, now: datetime) -> None:
    """Set ``status`` (dispatched / failed) on the outbox rows ``ids``."""
    if ids:
        await conn.execute(
            update(outbox)
            .where(outbox.c.id.in_(list(ids)))
            .values(status=status, dispatched_at=now)
        )


async def live_dispatch_job(conn: AsyncConnection) -> int | None:
    """The id of an ``event_dispatch`` job that is waiting or running, if any
    (served by ``ix_workflow_jobs_status_type``)."""
    query = (
        select(jobs.c.id)
        .where(jobs.c.type == EVENT_DISPATCH, jobs.c.status.in_([s.value for s in _ACTIVE]))
        .order_by(jobs.c.id)
        .limit(1)
    )
    found = (await conn.execute(query)).scalar_one_or_none()
    return None if found is None else int(found)


async def requeue_failed(conn: AsyncConnection, ids: Sequence[int]) -> list[int]:
    """Targeted recovery (SPEC O-18): make the listed ``failed`` rows pending
    again so the next dispatch fans them out; returns the ids that were
    failed (the others changed meanwhile). Hits already recorded for an event
    are UNIQUE, so a re-dispatch delivers only what had not been recorded."""
    if not ids:
        return []
    rows = (
        await conn.execute(
            update(outbox)
            .where(outbox.c.id.in_(list(ids)), outbox.c.status == "failed")
            .values(status="pending", dispatched_at=None)
            .returning(outbox.c.id)
        )
    ).scalars()
    return [int(i) for i in rows]


async def ensure_recovery_dispatch(
    conn: AsyncConnection,
    *,
    now: datetime,
    run_at: datetime,
    batch_key: str,
    ledger: LedgerDriver,
) -> int | None:
    """The live dispatch job for the pending rows, enqueued (due at
    ``run_at``) when there is none: unlike :func:`ensure_dispatch_job` this
    does not give up after :data:`MAX_CHAIN` ended jobs — an operator asked
    for it. ``batch_key`` (one per recovery run) keeps one run from enqueuing
    two. None when no row is pending."""
    live = await live_dispatch_job(conn)
    if live is not None:
        return live
    oldest = await oldest_pending(conn)
    if oldest is None:
        return None
    key = await dispatch_job_key(conn, oldest) or f"{EVENT_DISPATCH}:{oldest}:recovery:{batch_key}"
    result = await ledger.job_insert(
        conn,
        JobSpec(
            type=EVENT_DISPATCH_TYPE,
            payload={"fromEventId": oldest},
            idempotency_key=key,
            run_at=run_at,
        ),
        now=now,
    )
    return result.job_id
