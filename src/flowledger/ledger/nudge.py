"""A fresh wake hint for named overdue jobs (targeted recovery, SPEC O-18,
L-8): a pending job that is due but was not claimed gets its pool's hint
again, published when the caller's transaction commits — delegated to the
ledger driver (``jobs_wake``)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.ledger.driver import ledger_for


async def jobs_wake(conn: AsyncConnection, job_ids: list[int], *, now: datetime) -> list[int]:
    """Hint the pools of the listed jobs that are still pending and due;
    returns those jobs' ids (the others changed state meanwhile)."""
    return await ledger_for(conn).jobs_wake(conn, job_ids, now=now)
