"""Helpers of the conformance suite: snapshots of the ledger's rows and the
check that an operation changed job statuses only as
:data:`flowledger.states.JOB_TRANSITIONS` allows and never rewrote a
finished attempt."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from sqlalchemy import select

from flowledger.db.database import Database
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.types import JobType
from flowledger.states import JobTransition, Pool, transition_allowed

T = TypeVar("T")

CF_TYPE = JobType("cf_ledger_job", Pool.LEDGER.value, max_attempts=3)
CF_OUT = JobType("cf_ledger_out", Pool.OUTBOUND.value, max_attempts=3)


async def job_rows(db: Database) -> dict[int, dict[str, Any]]:
    async with db.read() as conn:
        rows = (await conn.execute(select(jobs))).mappings().all()
    return {int(r["id"]): dict(r) for r in rows}


async def attempt_rows(db: Database) -> dict[int, dict[str, Any]]:
    async with db.read() as conn:
        rows = (await conn.execute(select(executions))).mappings().all()
    return {int(r["id"]): dict(r) for r in rows}


async def job(db: Database, job_id: int) -> dict[str, Any]:
    return (await job_rows(db))[job_id]


def check_changes(
    transition: JobTransition | None,
    before: dict[int, dict[str, Any]],
    after: dict[int, dict[str, Any]],
    attempts_before: dict[int, dict[str, Any]],
    attempts_after: dict[int, dict[str, Any]],
) -> None:
    """Every job whose status changed moved as ``transition`` allows (None:
    no status may change); a finished attempt row is never rewritten."""
    for job_id, old in before.items():
        new = after.get(job_id)
        if new is None or new["status"] == old["status"]:
            continue
        assert transition is not None, f"job {job_id}: {old['status']} → {new['status']}"
        assert transition_allowed(transition, old["status"], new["status"]), (
            f"{transition}: job {job_id} {old['status']} → {new['status']} is forbidden"
        )
    for attempt_id, old in attempts_before.items():
        if old["status"] != "running" and attempt_id in attempts_after:
            assert attempts_after[attempt_id] == old, f"finished attempt {attempt_id} rewritten"


async def checked(db: Database, transition: JobTransition | None, op: Awaitable[T]) -> T:
    """Run ``op`` and check the changes it made (see :func:`check_changes`)."""
    before, attempts_before = await job_rows(db), await attempt_rows(db)
    result = await op
    check_changes(transition, before, await job_rows(db), attempts_before, await attempt_rows(db))
    return result


async def in_tx(db: Database, fn: Callable[[Any], Awaitable[T]]) -> T:
    async with db.begin() as conn:
        return await fn(conn)
