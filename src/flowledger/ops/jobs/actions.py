"""Operator actions on named jobs (SPEC L-24): retry and skip one job, batch
retry and batch skip by ids. Conditional replay lives in
:mod:`flowledger.ops.jobs.replay`; the shared batching pieces (staggering,
chunks, locks, replay batch ids) in :mod:`flowledger.ops.jobs.batching`.

The eligibility rules and the generation bump belong to the ledger primitives
the ledger driver's ``job_retry`` (failed / dead / canceled only;
a pending job refuses because an automatic retry is already scheduled, a
paused one because its instance must be resumed) and
the ledger driver's ``job_cancel`` (pending / running / paused /
failed / dead → canceled). This module adds:

- **Tenant scope** (A-3) through the shared :class:`JobFilter`: ``tenants=None``
  is every tenant. A job outside the scope is :class:`NotFoundError` for a
  single-job action, and in a batch it is not matched and its item reads
  exactly like an id that does not exist (code ``not_found``).
- **Batches** of 1 to 500 distinct ids (duplicates are dropped), written in
  transactions of at most 100 jobs each: a crash midway leaves whole chunks
  done, never half of one. Batch retry staggers the eligible jobs at ``rate``
  per second and stamps them with one replay batch id.
- **Counts**: ``matched`` = requested ids that exist and are visible;
  ``submitted`` + ``skipped`` = distinct requested ids; every id has an item
  ``{id, outcome, reason, code, status}`` in request order.
- **Recorded**: each batch is a batch operation of :mod:`flowledger.ops.batch`
  (``job.batch_retry`` under its replay batch id, ``job.batch_skip``), its
  progress written after each chunk; the outcomes ``submitted`` /
  ``skipped`` are its ``done`` / ``skipped``.
- A single retry clears the job's replay batch id: the id names the batch
  whose retry is the job's *current* generation.
- **Interventions** (issue 31): each job retried or skipped that belongs to
  an instance records ``job_retry`` / ``job_skip`` with its status before →
  after, by ``actor`` with ``reason``, in the transaction that changes it
  (:mod:`flowledger.engine.interventions`).

Never imports the API or the CLI.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.engine import interventions
from flowledger.errors import InvalidStateError, NotFoundError
from flowledger.ledger.driver import ledger_driver
from flowledger.ops.batch import BatchRecorder
from flowledger.ops.jobs.batching import (
    DEFAULT_RATE,
    SUBMITTED,
    BatchResult,
    ItemOutcome,
    check_rate,
    chunks,
    completion_window,
    distinct_ids,
    lock_jobs,
    new_batch_id,
    not_found_item,
    refused_item,
    retry_checked,
    scope,
    staggered_run_at,
    stamp_batch,
    visible_rows,
)
from flowledger.ops.jobs.filters import JobFilter

DEFAULT_SKIP_REASON = "skipped by operator"

_STATE_COLUMNS = (
    jobs.c.id,
    jobs.c.type,
    jobs.c.status,
    jobs.c.tenant_id,
    jobs.c.instance_id,
    jobs.c.generation,
    jobs.c.attempts,
    jobs.c.max_attempts,
    jobs.c.run_at,
    jobs.c.operation_key,
    jobs.c.replay_batch_id,
    jobs.c.cancel_reason,
    jobs.c.last_error,
    jobs.c.updated_at,
)

# An action on one locked job of a batch: (conn, its row — id, instance_id,
# status — index among the batch's submitted jobs so far) → None, or
# InvalidStateError when ineligible.
_Act = Callable[[AsyncConnection, Any, int], Awaitable[None]]


async def _state(conn: AsyncConnection, job_id: int) -> dict[str, Any]:
    row = (await conn.execute(select(*_STATE_COLUMNS).where(jobs.c.id == job_id))).one()
    return dict(row._mapping)


async def _intervention(
    conn: AsyncConnection,
    action: str,
    before: Any,
    *,
    actor: str,
    reason: str | None,
    now: datetime,
) -> None:
    """The instance's intervention for job ``before`` (a row with id,
    instance_id and status), read back after the change; none for a job of
    no instance."""
    if before.instance_id is None:
        return
    after = (await conn.execute(select(jobs.c.status).where(jobs.c.id == before.id))).scalar_one()
    await interventions.record(
        conn,
        int(before.instance_id),
        action,
        actor=actor,
        reason=reason,
        changes=[interventions.change(f"job.{before.id}.status", before.status, after)],
        now=now,
        job_id=int(before.id),
    )


# --------------------------------------------------------------- single job


async def visible_job(
    db: Database, job_id: int, *, tenants: Sequence[str] | None = None
) -> dict[str, Any]:
    """The job's current state; NotFoundError when it does not exist or lies
    outside ``tenants``."""
    query = JobFilter(tenants=scope(tenants)).apply(
        select(*_STATE_COLUMNS).where(jobs.c.id == job_id)
    )
    async with db.read() as conn:
        row = (await conn.execute(query)).first()
    if row is None:
        raise NotFoundError(f"job {job_id} not found", field="jobId")
    return dict(row._mapping)


async def _lock_visible(conn: AsyncConnection, job_id: int, tenants: Sequence[str] | None) -> Any:
    rows = await visible_rows(conn, [job_id], scope(tenants))
    if job_id not in rows:
        raise NotFoundError(f"job {job_id} not found", field="jobId")
    await lock_jobs(conn, rows.values())
    return (await visible_rows(conn, [job_id], None))[job_id]  # its status under the lock


async def retry_job(
    db: Database,
    job_id: int,
    *,
    now: datetime,
    actor: str,
    tenants: Sequence[str] | None = None,
    payload: dict[str, Any] | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """Retry one failed / dead / canceled job now; a changed ``payload`` gets a
    new operationKey. Returns the job's state after the retry."""
    ledger = ledger_driver(db)
    async with db.begin() as conn:
        before = await _lock_visible(conn, job_id, tenants)
        await retry_checked(conn, ledger, job_id, now=now, payload=payload)
        await stamp_batch(conn, ledger, [job_id], None)
        await _intervention(
            conn, interventions.JOB_RETRY, before, actor=actor, reason=reason, now=now
        )
        return await _state(conn, job_id)


async def skip_job(
    db: Database,
    job_id: int,
    *,
    now: datetime,
    actor: str,
    tenants: Sequence[str] | None = None,
    reason: str | None = None,
) -> dict[str, Any]:
    """Skip (cancel) one job: it never runs again and any executor holding the
    old generation loses the right to write. Returns the job's new state."""
    ledger = ledger_driver(db)
    async with db.begin() as conn:
        before = await _lock_visible(conn, job_id, tenants)
        await ledger.job_cancel(conn, job_id, now=now, reason=reason or DEFAULT_SKIP_REASON)
        await _intervention(
            conn, interventions.JOB_SKIP, before, actor=actor, reason=reason, now=now
        )
        return await _state(conn, job_id)


# ------------------------------------------------------------------ batches


async def _each(
    db: Database,
    ids: Iterable[int],
    tenants: Sequence[str] | None,
    act: _Act,
    recorder: BatchRecorder,
    *,
    batch_id: str | None = None,
) -> tuple[list[int], int, list[ItemOutcome]]:
    """Apply ``act`` to every visible listed job, one transaction per chunk,
    recorded as ``recorder``'s batch operation (progress after each chunk);
    returns the distinct ids, the matched count and the items in request order."""
    ledger = ledger_driver(db)
    wanted = distinct_ids(ids)
    visible_scope = scope(tenants)
    outcomes: dict[int, ItemOutcome] = {}
    matched = submitted = 0
    recorder.request = {**recorder.request, "ids": wanted}
    await recorder.start(len(wanted))
    try:
        for chunk in chunks(wanted):
            async with db.begin() as conn:
                rows = await visible_rows(conn, chunk, visible_scope)
                matched += len(rows)
                await lock_jobs(conn, rows.values())
                rows = await visible_rows(conn, list(rows), None)  # their status under the lock
                done: list[int] = []
                for job_id in chunk:
                    row = rows.get(job_id)
                    if row is None:
                        outcomes[job_id] = not_found_item(job_id)
                        continue
                    try:
                        await act(conn, row, submitted + len(done))
                    except InvalidStateError as exc:
                        outcomes[job_id] = refused_item(job_id, exc)
                        continue
                    done.append(job_id)
                    outcomes[job_id] = ItemOutcome(job_id, SUBMITTED, status=row.status)
                if batch_id is not None:
                    await stamp_batch(conn, ledger, done, batch_id)
            submitted += len(done)
            await recorder.progress([o.shared() for o in outcomes.values()])
    except BaseException as exc:
        await recorder.fail([o.shared() for o in outcomes.values()], exc)
        raise
    items = [outcomes[i] for i in wanted]
    await recorder.finish([o.shared() for o in items])
    return wanted, matched, items


def _recorder(
    db: Database,
    kind: str,
    *,
    now: datetime,
    actor: str,
    reason: str | None,
    tenants: Sequence[str] | None,
    batch_id: str | None = None,
    **request: Any,
) -> BatchRecorder:
    return BatchRecorder(
        db,
        kind,
        actor=actor,
        clock=lambda: now,
        reason=reason,
        tenants=tenants,
        request=request,
        batch_id=batch_id,
    )


async def batch_retry(
    db: Database,
    ids: Iterable[int],
    *,
    now: datetime,
    actor: str,
    tenants: Sequence[str] | None = None,
    rate: int = DEFAULT_RATE,
    replay_batch_id: str | None = None,
    reason: str | None = None,
) -> BatchResult:
    """Retry each listed job that is eligible, staggered at ``rate`` per second,
    under one replay batch id (``replay_batch_id``, or a new one)."""
    check_rate(rate)
    batch_id = replay_batch_id or new_batch_id()
    ledger = ledger_driver(db)

    async def retry(conn: AsyncConnection, row: Any, k: int) -> None:
        await retry_checked(conn, ledger, row.id, now=now, run_at=staggered_run_at(now, k, rate))
        await _intervention(conn, interventions.JOB_RETRY, row, actor=actor, reason=reason, now=now)

    recorder = _recorder(
        db,
        "job.batch_retry",
        now=now,
        actor=actor,
        reason=reason,
        tenants=tenants,
        batch_id=batch_id,
        rate=rate,
    )
    wanted, matched, items = await _each(db, ids, tenants, retry, recorder, batch_id=batch_id)
    submitted = sum(1 for item in items if item.outcome == SUBMITTED)
    start, end = completion_window(now, submitted, rate)
    return BatchResult(
        matched=matched,
        submitted=submitted,
        skipped=len(wanted) - submitted,
        items=items,
        rate=rate,
        window_from=start,
        window_to=end,
        replay_batch_id=batch_id,
        batch_id=recorder.id,
    )


async def batch_skip(
    db: Database,
    ids: Iterable[int],
    *,
    now: datetime,
    actor: str,
    tenants: Sequence[str] | None = None,
    reason: str | None = None,
) -> BatchResult:
    """Cancel each listed job that can still be canceled."""
    ledger = ledger_driver(db)

    async def cancel(conn: AsyncConnection, row: Any, _k: int) -> None:
        await ledger.job_cancel(conn, row.id, now=now, reason=reason or DEFAULT_SKIP_REASON)
        await _intervention(conn, interventions.JOB_SKIP, row, actor=actor, reason=reason, now=now)

    recorder = _recorder(db, "job.batch_skip", now=now, actor=actor, reason=reason, tenants=tenants)
    wanted, matched, items = await _each(db, ids, tenants, cancel, recorder)
    submitted = sum(1 for item in items if item.outcome == SUBMITTED)
    return BatchResult(
        matched=matched,
        submitted=submitted,
        skipped=len(wanted) - submitted,
        items=items,
        batch_id=recorder.id,
    )
