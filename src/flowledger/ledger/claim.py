"""Claiming (SPEC L-6, L-7, L-10): the claim order of a pool's n-th claim,
and the claim itself, delegated to the database's ledger driver
(:meth:`LedgerDriver.jobs_claim <flowledger.ledger.driver.LedgerDriver.jobs_claim>`)."""

from __future__ import annotations

from datetime import datetime

from flowledger.db.database import Database
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.driver.job_values import DEFAULT_LEASE_MS
from flowledger.ledger.models import ClaimedJob

__all__ = ["DEFAULT_LEASE_MS", "EVERY_NTH_BY_DUE", "claim_order", "jobs_claim", "jobs_next_due"]

EVERY_NTH_BY_DUE = 4  # SPEC L-7: every fourth claim orders by earliest due


def claim_order(claim_number: int) -> str:
    """The order of the ``claim_number``-th claim (1-based) of a pool."""
    return "due" if claim_number % EVERY_NTH_BY_DUE == 0 else "priority"


async def jobs_claim(
    db: Database,
    *,
    pool: str,
    limit: int,
    node_id: str,
    now: datetime,
    order: str = "priority",
    lease_ms: int = DEFAULT_LEASE_MS,
) -> list[ClaimedJob]:
    """Claim up to ``limit`` jobs of ``pool`` in their own transaction."""
    return await ledger_driver(db).jobs_claim(
        db, pool=pool, limit=limit, node_id=node_id, now=now, order=order, lease_ms=lease_ms
    )


async def jobs_next_due(db: Database, *, pool: str) -> datetime | None:
    """When the earliest pending job of ``pool`` falls due (None when none is pending)."""
    return await ledger_driver(db).jobs_next_due(db, pool=pool)
