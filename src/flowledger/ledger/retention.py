"""Retention deletes of the ledger's own tables (SPEC O-20): settled jobs
with their attempts and receipts, and worker-registry rows long after their
last heartbeat. Each call removes at most one bounded batch inside the
caller's transaction, so a retention run holds its locks for one batch only.

What is never removed here: a job that is pending, running, paused, failed or
dead (only ``succeeded`` and ``canceled`` qualify); any job of an instance
that is running or suspended or has an unresolved (pending) compensation
ticket. On PostgreSQL the batch is selected ``FOR UPDATE`` (rows in id order,
the parent job before its attempts, like every other writer of the ledger):
a job an operator is retrying at this moment is waited for — one short
transaction — and its new status is re-checked before it is removed, so a
retried job is never deleted. (Not ``SKIP LOCKED``: a skipped row behind the
keyset would survive the run and the preview would no longer equal it.)

Batches are keyset-paged by id (``after_id``), so one run passes over the
table once instead of re-scanning the rows it decided to keep.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import delete, exists, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from flowledger.db.compensation_schema import workflow_compensations as tickets
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.schema import system_scheduler_nodes as nodes
from flowledger.db.schema import workflow_job_effects as effects
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.states import InstanceStatus, JobStatus

PURGEABLE_JOB_STATUSES = (JobStatus.SUCCEEDED.value, JobStatus.CANCELED.value)
ACTIVE_INSTANCE_STATUSES = (InstanceStatus.RUNNING.value, InstanceStatus.SUSPENDED.value)


def instance_protected(instance_id: Any) -> ColumnElement[bool]:
    """True when the instance ``instance_id`` is running or suspended or has
    an unresolved compensation ticket: nothing of it may be removed."""
    active = exists().where(
        instances.c.id == instance_id, instances.c.status.in_(ACTIVE_INSTANCE_STATUSES)
    )
    ticket = exists().where(tickets.c.instance_id == instance_id, tickets.c.status == "pending")
    return or_(active, ticket)


def purgeable_jobs(before: datetime) -> list[ColumnElement[bool]]:
    """The conditions of a job retention may remove: settled as succeeded or
    canceled before ``before``, of no protected instance."""
    return [
        jobs.c.status.in_(PURGEABLE_JOB_STATUSES),
        jobs.c.updated_at < before,
        or_(jobs.c.instance_id.is_(None), ~instance_protected(jobs.c.instance_id)),
    ]


@dataclass(frozen=True)
class JobPurge:
    """One batch: the last id looked at and the rows removed per table."""

    last_id: int | None
    jobs: int
    attempts: int
    receipts: int


async def jobs_purge_count(conn: AsyncConnection, *, before: datetime) -> dict[str, int]:
    """How many rows :func:`jobs_purge_batch` would remove, per table."""
    eligible = select(jobs.c.id).where(*purgeable_jobs(before)).scalar_subquery()
    row = (
        await conn.execute(
            select(
                select(func.count()).where(*purgeable_jobs(before)).scalar_subquery(),
                select(func.count())
                .select_from(executions)
                .where(executions.c.job_id.in_(eligible))
                .scalar_subquery(),
                select(func.count())
                .select_from(effects)
                .where(effects.c.job_id.in_(eligible))
                .scalar_subquery(),
            )
        )
    ).one()
    return {
        "workflow_jobs": row[0],
        "workflow_job_executions": row[1],
        "workflow_job_effects": row[2],
    }


async def jobs_purge_batch(
    conn: AsyncConnection, *, before: datetime, after_id: int = 0, limit: int = 1000
) -> JobPurge:
    """Remove up to ``limit`` purgeable jobs with id > ``after_id`` together
    with their attempts and receipts, in the caller's transaction."""
    stmt = (
        select(jobs.c.id)
        .where(jobs.c.id > after_id, *purgeable_jobs(before))
        .order_by(jobs.c.id)
        .limit(limit)
    )
    if conn.dialect.name == "postgresql":
        stmt = stmt.with_for_update(of=jobs)
    ids = list((await conn.execute(stmt)).scalars())
    if not ids:
        return JobPurge(None, 0, 0, 0)
    attempts = await conn.execute(delete(executions).where(executions.c.job_id.in_(ids)))
    receipts = await conn.execute(delete(effects).where(effects.c.job_id.in_(ids)))
    removed = await conn.execute(delete(jobs).where(jobs.c.id.in_(ids)))
    return JobPurge(max(ids), removed.rowcount, attempts.rowcount, receipts.rowcount)


async def nodes_purge_count(conn: AsyncConnection, *, before: datetime) -> int:
    stmt = select(func.count()).select_from(nodes).where(nodes.c.heartbeat_at < before)
    return int((await conn.execute(stmt)).scalar_one())


async def nodes_purge_batch(conn: AsyncConnection, *, before: datetime, limit: int = 1000) -> int:
    """Remove up to ``limit`` worker-registry rows whose last heartbeat is
    older than ``before``."""
    ids = select(nodes.c.id).where(nodes.c.heartbeat_at < before).limit(limit)
    result = await conn.execute(delete(nodes).where(nodes.c.id.in_(ids.scalar_subquery())))
    return int(result.rowcount)
