"""Step receipts (SPEC L-14): an internal step's business write and its
receipt in ``workflow_job_effects`` commit in one fenced transaction; a retry
of the same operation finds the committed receipt and reuses its result
instead of writing again. The receipts themselves are the ledger driver's
(``job_lock_fenced_receipt`` — the fenced job lock and the receipt read in
one statement — and ``receipt_put``); this module runs a step around them.
A caller that must lock its own rows first in the same statement passes a
:class:`StepLock`, which composes the ledger's exported fence with them; one
that writes its own rows with the settlement passes a
:class:`StepSettlement`, which composes the ledger's exported settlement
with them.

A step that is its attempt's last write may also settle the attempt in its
own transaction (``settle``; River's ``JobCompleteTx``): the job is
succeeded exactly when the step's work commits, so no other transaction —
an instance's cleanup (L-22) above all — ever sees the work done and the
job still running, and a crash can no longer fall between the two.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.errors import LeaseLostError
from flowledger.ledger.driver.job_values import is_plain_success
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import Fence, Outcome

T = TypeVar("T")

StepFn = Callable[[AsyncConnection], Awaitable[Any]]


class StepLock(ABC):
    """A ``lock_first`` that takes the step's first statement itself: its
    own rows locked first, then the job's fenced lock and the step's
    receipt (L-13's order), in one statement where its store can — built
    from the ledger's exported fence (:mod:`flowledger.ledger.driver.fence`;
    the engine's is ``engine.store.job_lock``). The ledger runs nothing of
    the caller's: it calls :meth:`lock` instead of its own
    ``job_lock_fenced_receipt``."""

    @abstractmethod
    async def lock(
        self,
        conn: AsyncConnection,
        fence: Fence,
        operation_key: str,
        step_key: str,
        *,
        now: datetime,
    ) -> tuple[bool, Any]:
        """Lock, in order, and return (found, result) of the step's receipt;
        LeaseLostError when ``fence`` no longer owns the job."""


LockFirst = Callable[[AsyncConnection], Awaitable[None]] | StepLock


class StepSettlement(ABC):
    """A step's last statement taken by its store: the step's own rows not
    yet written, the step's receipt and the plain success (or skip) of its
    job — in one statement where the store can, built from the ledger's
    exported settlement (:mod:`flowledger.ledger.driver.postgres_parts`; the
    engine's is ``engine.step.JobStepSettlement``), else in order. The
    ledger hands over only a plain success without a side-effect
    confirmation (anything else it settles itself, the caller's rows being
    written before the commit as ever) and runs nothing of the caller's."""

    @abstractmethod
    async def settle(
        self,
        conn: AsyncConnection,
        fence: Fence,
        operation_key: str,
        step_key: str,
        result: Any,
        outcome: Outcome,
        *,
        now: datetime,
        started_at: datetime | None,
    ) -> bool:
        """Write, and return whether the fenced settlement took (False: the
        caller rolls back)."""


async def run_step(
    db: Database,
    ledger: LedgerDriver,
    fence: Fence,
    operation_key: str,
    step_key: str,
    fn: StepFn,
    *,
    now: Callable[[], datetime],
    lock_first: LockFirst | None = None,
    confirm_side_effect: bool = False,
    settle: Callable[[Any], Outcome | None] | None = None,
    started_at: datetime | None = None,
    settlement: StepSettlement | None = None,
) -> Any:
    """Run ``fn(conn)`` once per operation: in one transaction, lock (the
    caller's instance row via ``lock_first``, then) the job row fenced — a
    :class:`StepLock` takes both itself —
    return the committed receipt's result if there is one, else run ``fn`` and
    commit its result as the receipt. ``fn``'s result must be JSON-serialisable.
    With ``settle``, the attempt (which started at ``started_at``) also
    settles in that transaction with ``settle(result)``, unless that is None;
    a plain success (or skip) then goes to ``settlement`` where given, which
    writes the step's own rows with it.
    ``ledger`` is the driver of ``db``, chosen once by the caller (the
    worker). Raises :class:`~flowledger.errors.LeaseLostError` when the
    executor is stale."""
    driver = ledger
    async with db.begin() as conn:
        if isinstance(lock_first, StepLock):  # its rows and the job's, as it sends them
            found, result = await lock_first.lock(conn, fence, operation_key, step_key, now=now())
        else:
            if lock_first is not None:
                await lock_first(conn)
            found, result = await driver.job_lock_fenced_receipt(
                conn, fence, operation_key, step_key, now=now()
            )
        # "check before and after writing" (L-13): the row lock held since the
        # first check makes a second check redundant within this transaction.
        if not found:
            result = await fn(conn)
        outcome = settle(result) if settle is not None else None
        plain = outcome is not None and is_plain_success(outcome) and not confirm_side_effect
        if not found and outcome is not None and plain and settlement is not None:
            # the caller's store writes its rows, the receipt and the settlement
            settled = await settlement.settle(
                conn,
                fence,
                operation_key,
                step_key,
                result,
                outcome,
                now=now(),
                started_at=started_at,
            )
        elif not found and outcome is not None:
            # the receipt and the settlement in one call (one statement on PostgreSQL)
            settled = await driver.receipt_put_and_settle(
                conn,
                fence,
                operation_key,
                step_key,
                result,
                outcome,
                now=now(),
                started_at=started_at,
                confirm_side_effect=confirm_side_effect,
            )
        else:
            if not found:
                await driver.receipt_put(
                    conn,
                    fence,
                    operation_key,
                    step_key,
                    result,
                    now=now(),
                    confirm_side_effect=confirm_side_effect,
                )
            settled = outcome is None or await driver.job_settle(
                conn, fence, outcome, now=now(), started_at=started_at
            )
        if not settled:  # cannot happen under the fenced row lock; never commit the step without it
            raise LeaseLostError(f"job {fence.job_id} is no longer owned by this executor")
        return result
