"""Claiming (SPEC L-6, L-7, L-10): turn due pending jobs of one pool into
running jobs with a fresh lease token and one attempt row each."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, select

from flowledger.db.claim import claim_rows
from flowledger.db.database import Database
from flowledger.db.pg_hotpath import PgHotPath
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.models import ClaimedJob

DEFAULT_LEASE_MS = 60_000
EVERY_NTH_BY_DUE = 4  # SPEC L-7: every fourth claim orders by earliest due


def claim_order(claim_number: int) -> str:
    """The order of the ``claim_number``-th claim (1-based) of a pool."""
    return "due" if claim_number % EVERY_NTH_BY_DUE == 0 else "priority"


def _to_claimed(row: dict[str, Any]) -> ClaimedJob:
    return ClaimedJob(
        id=int(row["id"]),
        type=row["type"],
        pool=row["pool"],
        payload=row["payload"] or {},
        generation=row["generation"],
        attempt=row["attempts"],
        max_attempts=row["max_attempts"],
        lease_token=row["lease_token"],
        lease_until=row["lease_until"],
        execution_deadline=row["execution_deadline"],
        execution_id=int(row["execution_id"]),
        scheduled_at=row["run_at"],
        started_at=row["started_at"],
        operation_key=row["operation_key"],
        trace_id=row["trace_id"],
        tenant_id=row["tenant_id"],
        instance_id=row["instance_id"],
        task_id=row["task_id"],
        node_key=row["node_key"],
    )


async def jobs_claim(
    db: Database,
    *,
    pool: str,
    limit: int,
    node_id: str,
    now: datetime,
    order: str = "priority",
    lease_ms: int = DEFAULT_LEASE_MS,
    hot: PgHotPath | None = None,
) -> list[ClaimedJob]:
    """Claim up to ``limit`` jobs of ``pool`` in their own transaction
    (through ``hot``, the PostgreSQL hot-path connection, when given)."""
    if limit <= 0:
        return []
    if hot is not None:
        rows = await hot.claim(
            pool=pool, limit=limit, node_id=node_id, now=now, lease_ms=lease_ms, order=order
        )
        return [_to_claimed(row) for row in rows]
    async with db.single_statement() as conn:
        rows = await claim_rows(
            conn, pool=pool, limit=limit, node_id=node_id, now=now, lease_ms=lease_ms, order=order
        )
    return [_to_claimed(row) for row in rows]


async def jobs_next_due(db: Database, *, pool: str) -> datetime | None:
    """When the earliest pending job of ``pool`` falls due (None when none is
    pending); served by the partial index ``ix_workflow_jobs_claim_due``."""
    async with db.read() as conn:
        due: datetime | None = (
            await conn.execute(
                select(func.min(jobs.c.run_at)).where(
                    jobs.c.pool == pool, jobs.c.status == "pending"
                )
            )
        ).scalar_one_or_none()
    return due
