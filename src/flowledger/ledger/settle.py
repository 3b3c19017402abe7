"""Settlement (SPEC L-3 … L-5, L-9, L-17): record how an attempt ended and
move the parent job on, fenced by generation and lease token — delegated to
the ledger driver (:mod:`flowledger.ledger.driver.job_values` states the
outcome → status rules)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.ledger.driver import ledger_driver, ledger_for
from flowledger.ledger.models import ClaimedJob, Fence, Outcome


async def job_settle(
    conn: AsyncConnection,
    fence: Fence,
    outcome: Outcome,
    *,
    now: datetime,
    started_at: datetime | None = None,
) -> bool:
    """Settle one job inside the caller's transaction. False when fenced out."""
    return await ledger_for(conn).job_settle(conn, fence, outcome, now=now, started_at=started_at)


async def jobs_settle_many(
    db: Database, items: Sequence[tuple[ClaimedJob, Outcome]], *, now: datetime
) -> set[int]:
    """Settle a batch in its own transaction(s); the ids actually settled."""
    return await ledger_driver(db).jobs_settle(db, items, now=now)
