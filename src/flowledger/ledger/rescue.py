"""The rescuer behind the ``workflow-jobs-drain`` system task (SPEC L-20) and
targeted reclaim (O-18), in the caller's transaction — delegated to the
ledger driver (:mod:`flowledger.ledger.driver.core_maintenance` states the
rules)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.ledger.driver import ledger_for
from flowledger.ledger.driver.core_maintenance import RESCUE_BATCH
from flowledger.ledger.models import RescueReport

__all__ = ["RESCUE_BATCH", "RescueReport", "jobs_reclaim", "jobs_rescue"]


async def jobs_rescue(
    conn: AsyncConnection, *, now: datetime, limit: int = RESCUE_BATCH
) -> RescueReport:
    """Reclaim expired running jobs and republish hints."""
    return await ledger_for(conn).jobs_rescue(conn, now=now, limit=limit)


async def jobs_reclaim(conn: AsyncConnection, job_ids: list[int], *, now: datetime) -> RescueReport:
    """Reclaim exactly the listed jobs that are still running and expired."""
    return await ledger_for(conn).jobs_reclaim(conn, job_ids, now=now)
