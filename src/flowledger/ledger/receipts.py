"""Step receipts (SPEC L-14): an internal step's business write and its
receipt in ``workflow_job_effects`` commit in one fenced transaction; a retry
of the same operation finds the committed receipt and reuses its result
instead of writing again. Receipts are unique per operationKey + stepKey.

A receipt written after an unsafe external write was marked (L-17) records
that write's outcome: with ``confirm_side_effect`` the same transaction
clears the job's side-effect marker, so a crash between this commit and
settlement retries the job (which then reuses the receipt) instead of
dead-lettering it as ``external_outcome_unconfirmed``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.db.schema import workflow_job_effects as effects
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.fencing import job_lock_fenced
from flowledger.ledger.models import Fence

T = TypeVar("T")

StepFn = Callable[[AsyncConnection], Awaitable[Any]]


async def receipt_get(conn: AsyncConnection, operation_key: str, step_key: str) -> tuple[bool, Any]:
    row = (
        await conn.execute(
            select(effects.c.result).where(
                effects.c.operation_key == operation_key, effects.c.step_key == step_key
            )
        )
    ).first()
    return (row is not None, row.result if row is not None else None)


async def run_step(
    db: Database,
    fence: Fence,
    operation_key: str,
    step_key: str,
    fn: StepFn,
    *,
    now: Callable[[], datetime],
    lock_first: Callable[[AsyncConnection], Awaitable[None]] | None = None,
    confirm_side_effect: bool = False,
) -> Any:
    """Run ``fn(conn)`` once per operation: in one transaction, lock (the
    caller's instance row via ``lock_first``, then) the job row fenced,
    return the committed receipt's result if there is one, else run ``fn`` and
    commit its result as the receipt. ``fn``'s result must be JSON-serialisable.
    Raises :class:`~flowledger.errors.LeaseLostError` when the executor is stale."""
    async with db.begin() as conn:
        if lock_first is not None:
            await lock_first(conn)
        await job_lock_fenced(conn, fence, now=now())
        found, result = await receipt_get(conn, operation_key, step_key)
        if found:
            return result
        result = await fn(conn)
        await conn.execute(
            effects.insert().values(
                operation_key=operation_key,
                step_key=step_key,
                job_id=fence.job_id,
                generation=fence.generation,
                result=result,
                created_at=now(),
            )
        )
        if confirm_side_effect:
            await conn.execute(
                update(jobs).where(jobs.c.id == fence.job_id).values(side_effect_at=None)
            )
        # "check before and after writing" (L-13): the row lock held since the
        # first check makes a second check redundant within this transaction.
        return result
