"""Control of parent jobs from outside their executor — pause and resume
with an instance (SPEC L-18), cleanup when an instance ends (L-22), the
advancement cancel of a force jump, manual retry and cancel (L-5, L-9, L-24)
— in the caller's transaction, delegated to the ledger driver
(:mod:`flowledger.ledger.driver.core_control`)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.ledger.driver import ledger_for


async def jobs_pause_for_instance(
    conn: AsyncConnection, instance_id: int, *, types: Collection[str], now: datetime
) -> list[int]:
    """Pause the instance's jobs of ``types``; returns the paused ids."""
    return await ledger_for(conn).jobs_pause(conn, instance_id, types=types, now=now)


async def jobs_resume_for_instance(
    conn: AsyncConnection, instance_id: int, *, types: Collection[str], now: datetime
) -> list[int]:
    """Reschedule the instance's paused jobs of ``types`` with their saved remainder."""
    return await ledger_for(conn).jobs_resume(conn, instance_id, types=types, now=now)


async def jobs_cleanup_for_instance(
    conn: AsyncConnection,
    instance_id: int,
    *,
    types: Collection[str],
    now: datetime,
    reason: str = "instance ended",
    keep_job_id: int | None = None,
) -> list[int]:
    """SPEC L-22: cancel the instance's jobs of ``types`` that could still wake."""
    return await ledger_for(conn).jobs_cancel_for_instance(
        conn, instance_id, types=types, now=now, reason=reason, keep_job_id=keep_job_id
    )


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


async def jobs_cancel_advancement(
    conn: AsyncConnection,
    instance_id: int,
    *,
    types: Collection[str],
    now: datetime,
    reason: str,
    task_ids: list[int] | None = None,
    dry_run: bool = False,
) -> list[dict[str, Any]]:
    """Cancel the instance's jobs of ``types`` (all, or of ``task_ids``)."""
    return await ledger_for(conn).jobs_cancel_advancement(
        conn,
        instance_id,
        types=types,
        now=now,
        reason=reason,
        task_ids=task_ids,
        dry_run=dry_run,
    )
