"""Ownership checks for executors (SPEC L-9 … L-11, L-13, L-17): lease
renewal, the fenced row lock a business transaction takes before writing, and
the side-effect marker an unsafe external write records before sending."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta

from sqlalchemy import case, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.claim import fence_clause
from flowledger.db.database import Database
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import LeaseLostError
from flowledger.ledger.models import ClaimedJob, Fence


async def job_lock_fenced(conn: AsyncConnection, fence: Fence, *, now: datetime) -> None:
    """Lock the job row and prove the executor still owns it: same generation
    and lease token, still running, execution deadline not reached. Raises
    :class:`LeaseLostError` otherwise. Callers lock the instance row first."""
    owned = (
        await conn.execute(
            select(jobs.c.id)
            .where(
                fence_clause([(fence.job_id, fence.generation, fence.lease_token)]),
                jobs.c.execution_deadline > now,
            )
            .with_for_update()
        )
    ).first()
    if owned is None:
        raise LeaseLostError(f"job {fence.job_id} is no longer owned by this executor")


async def jobs_renew_leases(
    db: Database, claimed: Sequence[ClaimedJob], *, now: datetime, lease_ms: int
) -> set[int]:
    """Extend the leases of ``claimed`` (never past their execution deadline).
    Returns the ids still owned; the others have lost their lease or deadline."""
    if not claimed:
        return set()
    new_until = {
        job.id: min(now + timedelta(milliseconds=lease_ms), job.execution_deadline)
        for job in claimed
    }
    stmt = (
        update(jobs)
        .where(
            fence_clause([(j.id, j.generation, j.lease_token) for j in claimed]),
            jobs.c.execution_deadline > now,
        )
        .values(lease_until=case(new_until, value=jobs.c.id), updated_at=now)
        .returning(jobs.c.id)
    )
    async with db.single_statement() as conn:
        return {int(i) for i in (await conn.execute(stmt)).scalars()}


async def job_mark_side_effect(db: Database, fence: Fence, *, now: datetime) -> None:
    """SPEC L-17: record, before an unsafe external write is sent, that its
    outcome may become unknowable. Committed before the caller sends."""
    async with db.begin() as conn:
        await job_lock_fenced(conn, fence, now=now)
        await conn.execute(
            update(jobs).where(jobs.c.id == fence.job_id).values(side_effect_at=now, updated_at=now)
        )
        await conn.execute(
            update(executions)
            .where(executions.c.id == fence.execution_id)
            .values(side_effect_at=now)
        )
