"""Fabricated ledger rows for the demo's health cases (SPEC O-16, O-18):
the rows a crash leaves that the demo cannot cause on a laptop (a lost job,
an attempt dead-lettered by the drain after its executor died, a job in
backoff after refused calls) and the backdating that makes a case look two
hours old. Not part of :class:`~flowledger.ledger.driver.LedgerDriver` and
never called in production; it lives here so the job tables keep one
writer package. Every function runs in the caller's transaction."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.schema import workflow_job_effects as effects
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.fingerprint import fingerprint

_SHIFTED = ("created_at", "updated_at", "run_at")
_ATTEMPT_SHIFTED = ("scheduled_at", "started_at", "finished_at")


async def job_forge(conn: AsyncConnection, job_id: int, **values: Any) -> None:
    """Set the job's columns as the event being imitated would have left them."""
    if values.get("last_error"):
        values["last_error_fingerprint"] = fingerprint(values["last_error"])
    await conn.execute(update(jobs).where(jobs.c.id == job_id).values(**values))


async def attempt_forge(conn: AsyncConnection, **values: Any) -> None:
    """Add an attempt row as the event being imitated would have left it."""
    if values.get("error"):
        values["error_fingerprint"] = fingerprint(values["error"])
    await conn.execute(executions.insert().values(**values))


async def job_forget(conn: AsyncConnection, job_id: int) -> None:
    """Remove a job with its attempts and receipts, as if its enqueue had
    been lost (explicitly: on PostgreSQL no key cascades,
    :mod:`flowledger.db.job_history_keys`)."""
    await conn.execute(executions.delete().where(executions.c.job_id == job_id))
    await conn.execute(effects.delete().where(effects.c.job_id == job_id))
    await conn.execute(jobs.delete().where(jobs.c.id == job_id))


async def jobs_backdate(conn: AsyncConnection, instance_id: int, age: timedelta) -> None:
    """Shift the timestamps of the instance's jobs and of their attempts
    ``age`` into the past (together: retention relies on an attempt never
    starting a day after its job's ``updated_at``,
    :data:`~flowledger.ledger.driver.core_maintenance.ATTEMPT_START_SLACK`)."""
    rows = (
        await conn.execute(
            select(jobs.c.id, *(jobs.c[c] for c in _SHIFTED)).where(
                jobs.c.instance_id == instance_id
            )
        )
    ).all()
    for row in rows:
        values = {c: getattr(row, c) - age for c in _SHIFTED if getattr(row, c) is not None}
        if values:
            await conn.execute(update(jobs).where(jobs.c.id == row.id).values(**values))
    attempts = (
        await conn.execute(
            select(executions.c.id, *(executions.c[c] for c in _ATTEMPT_SHIFTED)).where(
                executions.c.job_id.in_([row.id for row in rows])
            )
        )
    ).all()
    for attempt in attempts:
        shifted = {
            c: getattr(attempt, c) - age
            for c in _ATTEMPT_SHIFTED
            if getattr(attempt, c) is not None
        }
        # (PostgreSQL moves the row into the partition of its new day)
        await conn.execute(
            update(executions).where(executions.c.id == attempt.id).values(**shifted)
        )
