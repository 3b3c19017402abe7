"""Step receipts (SPEC L-14): an internal step's business write and its
receipt in ``workflow_job_effects`` commit in one fenced transaction; a retry
of the same operation finds the committed receipt and reuses its result
instead of writing again. Receipts are unique per operationKey + stepKey.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.db.schema import workflow_job_effects as effects
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
        # "check before and after writing" (L-13): the row lock held since the
        # first check makes a second check redundant within this transaction.
        return result
