"""A fresh wake hint for named overdue jobs (targeted recovery, SPEC O-18,
L-8): a pending job that is due but was not claimed — its hint was lost and
no poll picked it up yet, or no worker of its pool was listening — gets its
pool's hint again, published when the caller's transaction commits. Nothing
about the job changes; the hint only makes idle pools claim now."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db import wake
from flowledger.db.schema import workflow_jobs as jobs


async def jobs_wake(conn: AsyncConnection, job_ids: list[int], *, now: datetime) -> list[int]:
    """Hint the pools of the listed jobs that are still pending and due;
    returns those jobs' ids (the others changed state meanwhile)."""
    if not job_ids:
        return []
    rows = (
        await conn.execute(
            select(jobs.c.id, jobs.c.pool).where(
                jobs.c.id.in_(job_ids), jobs.c.status == "pending", jobs.c.run_at <= now
            )
        )
    ).all()
    for pool in sorted({row.pool for row in rows}):
        await wake.hint(conn, pool)
    return [int(row.id) for row in rows]
