"""What a handler receives: the claimed job, its payload, the abort signal,
and helpers that write through the job's fence — ``step`` for step receipts
(SPEC L-14; with ``completes``, the step also settles the attempt in its own
transaction) and ``mark_side_effect`` before an unsafe external write
(L-17). :func:`result_outcome` reads a handler's return value as an
outcome."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import ClaimedJob, Outcome, OutcomeKind
from flowledger.ledger.receipts import LockFirst, StepSettlement, run_step


@dataclass(frozen=True)
class Skip:
    """Return this from a handler when nothing had to be done (attempt
    status ``skipped``, SPEC L-4)."""

    reason: str


SETTLES_IN_STEP = (OutcomeKind.SUCCESS, OutcomeKind.SKIPPED)


def result_outcome(result: Any) -> Outcome:
    """The outcome of a handler that returned ``result``: success with it
    (a ``Skip``: skipped), dead when it is not JSON."""
    if isinstance(result, Skip):
        return Outcome.skipped(result.reason)
    if result is not None:
        try:
            json.dumps(result)
        except (TypeError, ValueError):
            return Outcome.dead(
                f"handler returned a value that is not JSON: {type(result).__name__}",
                code="bad_result",
            )
    return Outcome.success(result)


class AbortReason:
    LEASE_LOST = "lease_lost"
    DEADLINE = "deadline_exceeded"
    SHUTDOWN = "shutdown"


class JobContext:
    """The execution context of one attempt."""

    def __init__(
        self, job: ClaimedJob, db: Database, clock: Clock, *, ledger: LedgerDriver | None = None
    ) -> None:
        self.job = job
        self.db = db
        self.clock = clock
        # the ledger driver of the steps' transactions: the worker's, chosen
        # once (a context built without one chooses it here)
        self.ledger = ledger or ledger_driver(db)
        self.abort = asyncio.Event()
        self.abort_reason: str | None = None
        self.on_abort: list[Callable[[], None]] = []  # called once, when the abort fires
        self.side_effect_marked = False
        self.settled = False  # the attempt settled in a step's own transaction
        # the latest outbound request/response records (stored on the attempt row)
        self.exchange: tuple[dict[str, Any] | None, dict[str, Any] | None] = (None, None)

    def record_exchange(
        self, request: dict[str, Any] | None, response: dict[str, Any] | None
    ) -> None:
        self.exchange = (request, response)

    @property
    def payload(self) -> dict[str, Any]:
        return self.job.payload

    @property
    def idempotency_key(self) -> str:
        """The stable key for outbound calls (``X-Idempotency-Key``, L-16)."""
        return self.job.operation_key

    @property
    def aborted(self) -> bool:
        return self.abort.is_set()

    def fire_abort(self, reason: str) -> None:
        if not self.abort.is_set():
            self.abort_reason = reason
            self.abort.set()
            for callback in self.on_abort:
                callback()

    async def step(
        self,
        key: str,
        fn: Callable[[AsyncConnection], Awaitable[Any]],
        *,
        lock_first: LockFirst | None = None,
        completes: Callable[[Any], Any] | None = None,
        settlement: StepSettlement | None = None,
    ) -> Any:
        """Run the internal step ``key`` once per operation: its business write
        and its receipt commit together; a retry returns the committed result.
        A step after :meth:`mark_side_effect` records the external write's
        outcome, so it also clears the marker (L-17): from then on the job is
        an ordinary one again.

        ``completes``: the step is the attempt's last write, and
        ``completes(result)`` is what the handler returns for it (a value or
        a :class:`Skip`). The attempt then settles as succeeded (or skipped)
        in the step's own transaction, so the job is finished exactly when
        its work commits (an instance's cleanup never finds it running with
        its work done); the worker writes no settlement of its own for it.
        ``settlement``: the store that writes the step's own rows with that
        settlement (see :func:`~flowledger.ledger.receipts.run_step`)."""

        decided: list[Outcome] = []  # what the step settled, once its transaction ran
        settle: Callable[[Any], Outcome | None] | None = None
        if completes is not None:  # even after an abort: a step the fence let through did the work
            finish = completes

            def settle(result: Any) -> Outcome | None:
                outcome = result_outcome(finish(result))
                decided[:] = [outcome] if outcome.kind in SETTLES_IN_STEP else []
                return decided[0] if decided else None

        result = await run_step(
            self.db,
            self.ledger,
            self.job.fence,
            self.job.operation_key,
            key,
            fn,
            now=self.clock.now,
            lock_first=lock_first,
            confirm_side_effect=self.side_effect_marked,
            settle=settle,
            started_at=self.job.started_at,
            settlement=settlement,
        )
        self.side_effect_marked = False
        self.settled = self.settled or bool(decided)  # its transaction committed
        return result

    async def mark_side_effect(self) -> None:
        """Record, before sending, that an unsafe external write is about to go
        out; from then on an unknown outcome dead-letters the job (L-17)."""
        await self.ledger.job_mark_side_effect(self.db, self.job.fence, now=self.clock.now())
        self.side_effect_marked = True
