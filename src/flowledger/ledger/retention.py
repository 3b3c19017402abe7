"""Retention deletes of the ledger's own tables (SPEC O-20): settled jobs
with their attempts and receipts, and worker-registry rows long after their
last heartbeat, one bounded batch per call inside the caller's transaction —
delegated to the ledger driver (:mod:`flowledger.ledger.driver.core_maintenance`
states what is never removed and how batches lock)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.ledger.driver import ledger_for
from flowledger.ledger.driver.core_maintenance import (
    ACTIVE_INSTANCE_STATUSES,
    PURGEABLE_JOB_STATUSES,
    instance_protected,
    purgeable_jobs,
)
from flowledger.ledger.models import JobPurge

__all__ = [
    "ACTIVE_INSTANCE_STATUSES",
    "PURGEABLE_JOB_STATUSES",
    "JobPurge",
    "instance_protected",
    "jobs_purge_batch",
    "jobs_purge_count",
    "nodes_purge_batch",
    "nodes_purge_count",
    "purgeable_jobs",
]


async def jobs_purge_count(conn: AsyncConnection, *, before: datetime) -> dict[str, int]:
    """How many rows :func:`jobs_purge_batch` would remove, per table."""
    return await ledger_for(conn).jobs_purge_count(conn, before=before)


async def jobs_purge_batch(
    conn: AsyncConnection, *, before: datetime, after_id: int = 0, limit: int = 1000
) -> JobPurge:
    """Remove up to ``limit`` purgeable jobs with id > ``after_id``."""
    return await ledger_for(conn).jobs_purge_batch(
        conn, before=before, after_id=after_id, limit=limit
    )


async def nodes_purge_count(conn: AsyncConnection, *, before: datetime) -> int:
    return await ledger_for(conn).nodes_purge_count(conn, before=before)


async def nodes_purge_batch(conn: AsyncConnection, *, before: datetime, limit: int = 1000) -> int:
    """Remove up to ``limit`` worker-registry rows older than ``before``."""
    return await ledger_for(conn).nodes_purge_batch(conn, before=before, limit=limit)
