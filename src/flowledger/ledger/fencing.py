"""Ownership checks for executors (SPEC L-9 … L-11, L-13, L-17): lease
renewal, the fenced row lock a business transaction takes before writing, and
the side-effect marker an unsafe external write records before sending —
delegated to the ledger driver."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.ledger.driver import ledger_driver, ledger_for
from flowledger.ledger.models import ClaimedJob, Fence


async def job_lock_fenced(conn: AsyncConnection, fence: Fence, *, now: datetime) -> None:
    """Lock the job row and prove the executor still owns it, in the caller's
    transaction; raises :class:`~flowledger.errors.LeaseLostError` otherwise."""
    await ledger_for(conn).job_lock_fenced(conn, fence, now=now)


async def jobs_renew_leases(
    db: Database, claimed: Sequence[ClaimedJob], *, now: datetime, lease_ms: int
) -> set[int]:
    """Extend the leases of ``claimed``; the ids still owned."""
    return await ledger_driver(db).jobs_renew_leases(db, claimed, now=now, lease_ms=lease_ms)


async def job_mark_side_effect(db: Database, fence: Fence, *, now: datetime) -> None:
    """SPEC L-17: committed before the caller sends an unsafe external write."""
    await ledger_driver(db).job_mark_side_effect(db, fence, now=now)
