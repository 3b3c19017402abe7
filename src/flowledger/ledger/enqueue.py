"""Enqueue (SPEC L-1, L-12, L-15): write pending parent jobs inside the
caller's transaction and publish the pool's wake hint on commit — delegated
to the ledger driver (``job_insert`` / ``jobs_insert``)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.ledger.driver import ledger_for
from flowledger.ledger.models import EnqueueResult, JobSpec, new_key

__all__ = ["enqueue", "enqueue_many", "new_key"]


async def enqueue(conn: AsyncConnection, spec: JobSpec, *, now: datetime) -> EnqueueResult:
    """Enqueue one job in the caller's transaction."""
    return await ledger_for(conn).job_insert(conn, spec, now=now)


async def enqueue_many(
    conn: AsyncConnection, specs: Sequence[JobSpec], *, now: datetime
) -> list[int]:
    """Bulk enqueue jobs (one multi-row insert when none has an idempotencyKey)."""
    return await ledger_for(conn).jobs_insert(conn, specs, now=now)
