"""Settlement (SPEC L-3 … L-5, L-9, L-17): record how an attempt ended and move
the parent job on, fenced by generation and lease token.

A settlement whose fence no longer matches (the job was canceled, retried,
suspended, or its expired lease was reclaimed) writes nothing and reports
False; a finished attempt row is never rewritten (``status = 'running'`` guard).

Outcome → parent status: success/skipped → succeeded; retry → pending with
backoff while attempts remain, else dead (``attempts_exhausted``); dead →
dead; unconfirmed → dead with ``external_outcome_unconfirmed``; released
(orderly shutdown) → pending now, the attempt not counted.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, case, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.claim import fence_clause
from flowledger.db.database import Database
from flowledger.db.pg_hotpath import PgHotPath, SuccessRow
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.db.types import JsonType
from flowledger.ledger.backoff import backoff_ms
from flowledger.ledger.fingerprint import fingerprint
from flowledger.ledger.models import ClaimedJob, Fence, Outcome, OutcomeKind
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED, AttemptStatus, JobStatus

_CLEAR_LEASE: dict[str, Any] = {"lease_token": None, "lease_until": None, "lease_owner": None}


def _duration_ms(started_at: datetime, now: datetime) -> int:
    return max(0, int((now - started_at).total_seconds() * 1000))


def _plan(
    attempts: int, max_attempts: int, outcome: Outcome, now: datetime
) -> tuple[dict[str, Any], AttemptStatus]:
    """The job columns and the attempt status an outcome leads to."""
    kind = outcome.kind
    if kind in (OutcomeKind.SUCCESS, OutcomeKind.SKIPPED):
        values = {
            "status": JobStatus.SUCCEEDED,
            "result": outcome.result,
            "last_error": None,
            "last_error_code": None,
            "last_error_fingerprint": None,
        }
        status = AttemptStatus.SUCCEEDED if kind is OutcomeKind.SUCCESS else AttemptStatus.SKIPPED
        return values, status
    if kind is OutcomeKind.RELEASED:  # handed back: the attempt does not count
        released: dict[str, Any] = {
            "status": JobStatus.PENDING,
            "run_at": now + timedelta(milliseconds=outcome.retry_delay_ms or 0),
            "attempts": max(attempts - 1, 0),
        }
        if outcome.error_code != "released":  # deferred: say why it waits
            released.update(
                last_error=outcome.error,
                last_error_code=outcome.error_code,
                last_error_fingerprint=fingerprint(outcome.error),
            )
        return released, AttemptStatus.CANCELED
    values = {
        "last_error": outcome.error,
        "last_error_code": outcome.error_code,
        "last_error_fingerprint": fingerprint(outcome.error),
    }
    if kind is OutcomeKind.UNCONFIRMED:
        values.update(status=JobStatus.DEAD, last_error_code=EXTERNAL_OUTCOME_UNCONFIRMED)
    elif kind is OutcomeKind.DEAD:
        values["status"] = JobStatus.DEAD
    elif attempts >= max_attempts:
        values.update(status=JobStatus.DEAD, last_error_code="attempts_exhausted")
    else:
        delay = (
            outcome.retry_delay_ms if outcome.retry_delay_ms is not None else backoff_ms(attempts)
        )
        values.update(status=JobStatus.PENDING, run_at=now + timedelta(milliseconds=delay))
    return values, AttemptStatus.FAILED


async def job_settle(
    conn: AsyncConnection,
    fence: Fence,
    outcome: Outcome,
    *,
    now: datetime,
    started_at: datetime | None = None,
) -> bool:
    """Settle one job inside the caller's transaction. False when fenced out."""
    row = (
        await conn.execute(
            select(jobs.c.attempts, jobs.c.max_attempts)
            .where(
                jobs.c.id == fence.job_id,
                fence_clause([(fence.job_id, fence.generation, fence.lease_token)]),
            )
            .with_for_update()
        )
    ).first()
    if row is None:
        return False
    values, attempt_status = _plan(row.attempts, row.max_attempts, outcome, now)
    await conn.execute(
        update(jobs)
        .where(jobs.c.id == fence.job_id)
        .values(**values, **_CLEAR_LEASE, updated_at=now)
    )
    attempt_values: dict[str, Any] = {
        "status": attempt_status,
        "finished_at": now,
        "error": outcome.error,
        # the attempt keeps its own cause; the job may say "attempts_exhausted"
        "error_code": outcome.error_code if outcome.error else None,
        "error_fingerprint": fingerprint(outcome.error),
    }
    if outcome.request is not None:
        attempt_values["request"] = outcome.request
    if outcome.response is not None:
        attempt_values["response"] = outcome.response
    if started_at is not None:
        attempt_values["duration_ms"] = _duration_ms(started_at, now)
    await conn.execute(
        update(executions)
        .where(executions.c.id == fence.execution_id, executions.c.status == "running")
        .values(**attempt_values)
    )
    return True


async def jobs_settle_many(
    db: Database,
    items: Sequence[tuple[ClaimedJob, Outcome]],
    *,
    now: datetime,
    hot: PgHotPath | None = None,
) -> set[int]:
    """Settle a batch; returns the ids actually settled (the rest were fenced out).

    Successes and skips share one fenced UPDATE per table (on PostgreSQL one
    autocommit statement); other outcomes are settled one by one in a single
    transaction."""
    plain = [
        (job, o)
        for job, o in items
        if o.kind in (OutcomeKind.SUCCESS, OutcomeKind.SKIPPED)
        and o.request is None
        and o.response is None
    ]
    plain_ids = {job.id for job, _ in plain}
    other = [(job, o) for job, o in items if job.id not in plain_ids]
    settled: set[int] = set()
    if plain and hot is not None:
        settled |= await hot.settle_successes(
            [
                SuccessRow(
                    job.id,
                    job.generation,
                    job.lease_token,
                    job.execution_id,
                    _duration_ms(job.started_at, now),
                    o.kind is OutcomeKind.SKIPPED,
                    o.result,
                )
                for job, o in plain
            ],
            now=now,
        )
    elif plain:
        settled |= await _settle_successes(db, plain, now=now)
    if other:
        async with db.begin() as conn:
            for job, outcome in other:
                if await job_settle(conn, job.fence, outcome, now=now, started_at=job.started_at):
                    settled.add(job.id)
    return settled


def _success_statements(
    items: Sequence[tuple[ClaimedJob, Outcome]], now: datetime
) -> tuple[Any, Any]:
    fences = [(job.id, job.generation, job.lease_token) for job, _ in items]
    results = {
        job.id: bindparam(None, o.result, type_=JsonType)
        for job, o in items
        if o.result is not None
    }
    job_values: dict[str, Any] = {
        "status": JobStatus.SUCCEEDED,
        "last_error": None,
        "last_error_code": None,
        "last_error_fingerprint": None,
        "updated_at": now,
        **_CLEAR_LEASE,
    }
    if results:
        job_values["result"] = case(results, value=jobs.c.id, else_=None)
    job_stmt = update(jobs).where(fence_clause(fences)).values(**job_values)
    skipped = [job.execution_id for job, o in items if o.kind is OutcomeKind.SKIPPED]
    attempt_status: Any = AttemptStatus.SUCCEEDED.value
    if skipped:
        attempt_status = case(
            (executions.c.id.in_(skipped), AttemptStatus.SKIPPED.value),
            else_=AttemptStatus.SUCCEEDED.value,
        )
    durations = {job.execution_id: _duration_ms(job.started_at, now) for job, _ in items}
    attempt_stmt = update(executions).values(
        status=attempt_status,
        finished_at=now,
        duration_ms=case(durations, value=executions.c.id, else_=0),
    )
    return job_stmt, attempt_stmt


async def _settle_successes(
    db: Database, items: Sequence[tuple[ClaimedJob, Outcome]], *, now: datetime
) -> set[int]:
    job_stmt, attempt_stmt = _success_statements(items, now)
    by_job = {job.id: job.execution_id for job, _ in items}
    if db.is_sqlite:
        async with db.begin() as conn:
            ids = {int(i) for i in (await conn.execute(job_stmt.returning(jobs.c.id))).scalars()}
            if ids:
                await conn.execute(
                    attempt_stmt.where(
                        executions.c.id.in_([by_job[i] for i in ids]),
                        executions.c.status == "running",
                    )
                )
        return ids
    # PostgreSQL: both updates in one statement through a data-modifying CTE.
    settled = job_stmt.returning(jobs.c.id).cte("settled")
    attempts = (
        attempt_stmt.where(
            executions.c.job_id.in_(select(settled.c.id)),
            executions.c.id.in_(list(by_job.values())),
            executions.c.status == "running",
        )
        .returning(executions.c.id)
        .cte("attempts")
    )
    stmt = select(settled.c.id).add_cte(attempts)
    async with db.single_statement() as conn:
        return {int(i) for i in (await conn.execute(stmt)).scalars()}
