"""Enqueue (SPEC L-1, L-12, L-15): write a pending parent job inside the
caller's transaction and publish the pool's wake hint on commit.

The idempotencyKey is enforced by the unique constraint on
``workflow_jobs.idempotency_key`` (``INSERT … ON CONFLICT DO NOTHING``), never
by a prior lookup, so two concurrent enqueuers of one business event create
exactly one job.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db import wake
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import FlowledgerError
from flowledger.ledger.models import EnqueueResult, JobSpec
from flowledger.ledger.types import get_job_type
from flowledger.states import JobStatus


def new_key() -> str:
    return uuid.uuid4().hex


def _row(spec: JobSpec, now: datetime) -> dict[str, Any]:
    job_type = get_job_type(spec.type)
    if spec.delay_ms < 0:
        raise FlowledgerError("delay must not be negative", field="delayMs")
    run_at = spec.run_at or now + timedelta(milliseconds=spec.delay_ms)
    max_attempts = job_type.max_attempts if spec.max_attempts is None else spec.max_attempts
    if max_attempts < 1:
        raise FlowledgerError("maxAttempts must be at least 1", field="maxAttempts")
    timeout_ms = (
        job_type.execution_timeout_ms
        if spec.execution_timeout_ms is None
        else spec.execution_timeout_ms
    )
    if timeout_ms < 1:
        raise FlowledgerError("executionTimeoutMs must be positive", field="executionTimeoutMs")
    return {
        "type": job_type.name,
        "pool": job_type.pool,
        "status": JobStatus.PENDING.value,
        "payload": spec.payload,
        "tenant_id": spec.tenant_id,
        "instance_id": spec.instance_id,
        "task_id": spec.task_id,
        "node_key": spec.node_key,
        "priority": job_type.priority if spec.priority is None else spec.priority,
        "run_at": run_at,
        "attempts": 0,
        "max_attempts": max_attempts,
        "generation": 1,
        "execution_timeout_ms": timeout_ms,
        "operation_key": spec.operation_key or new_key(),
        "trace_id": spec.trace_id or new_key(),
        "idempotency_key": spec.idempotency_key,
        "created_at": now,
        "updated_at": now,
    }


async def enqueue(conn: AsyncConnection, spec: JobSpec, *, now: datetime) -> EnqueueResult:
    """Enqueue one job in the caller's transaction."""
    row = _row(spec, now)
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    stmt = (
        insert(jobs)
        .values(**row)
        .on_conflict_do_nothing(index_elements=[jobs.c.idempotency_key])
        .returning(jobs.c.id)
    )
    job_id = (await conn.execute(stmt)).scalar_one_or_none()
    if job_id is None:  # the idempotency key already names a job
        existing = await conn.execute(
            select(jobs.c.id).where(jobs.c.idempotency_key == spec.idempotency_key)
        )
        return EnqueueResult(existing.scalar_one(), created=False)
    await wake.hint(conn, row["pool"])
    return EnqueueResult(int(job_id), created=True)


async def enqueue_many(
    conn: AsyncConnection, specs: Sequence[JobSpec], *, now: datetime
) -> list[int]:
    """Bulk enqueue jobs without idempotency keys in one multi-row insert."""
    rows = [_row(spec, now) for spec in specs]
    if any(row["idempotency_key"] for row in rows):
        return [(await enqueue(conn, spec, now=now)).job_id for spec in specs]
    if not rows:
        return []
    result = await conn.execute(
        jobs.insert().returning(jobs.c.id, sort_by_parameter_order=True), rows
    )
    ids = [int(job_id) for job_id in result.scalars()]
    for pool in {row["pool"] for row in rows}:
        await wake.hint(conn, pool)
    return ids
