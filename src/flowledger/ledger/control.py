"""An operator's control of one parent job from outside its executor —
manual retry and cancel (L-5, L-9, L-24) — in the caller's transaction,
delegated to the ledger driver (:mod:`flowledger.ledger.driver.core_control`).
The engine pauses, resumes and cleans up an instance's jobs (L-18, L-22) and
cancels a force jump's advancement jobs through the ledger driver its store
holds (``step.store.ledger``: ``jobs_pause``, ``jobs_resume``,
``jobs_cancel_for_instance``, ``jobs_cancel_advancement``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.ledger.driver import ledger_for


async def job_retry(
    conn: AsyncConnection,
    job_id: int,
    *,
    now: datetime,
    payload: dict[str, Any] | None = None,
    run_at: datetime | None = None,
) -> None:
    """Manual retry: failed/dead/canceled → pending, a new generation."""
    await ledger_for(conn).job_retry(conn, job_id, now=now, payload=payload, run_at=run_at)


async def job_cancel(
    conn: AsyncConnection, job_id: int, *, now: datetime, reason: str = "canceled by operator"
) -> None:
    """Cancel (an operator's "skip")."""
    await ledger_for(conn).job_cancel(conn, job_id, now=now, reason=reason)
