"""What a handler receives: the claimed job, its payload, the abort signal,
and helpers that write through the job's fence — ``step`` for step receipts
(SPEC L-14) and ``mark_side_effect`` before an unsafe external write (L-17)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.ledger.fencing import job_mark_side_effect
from flowledger.ledger.models import ClaimedJob
from flowledger.ledger.receipts import run_step


@dataclass(frozen=True)
class Skip:
    """Return this from a handler when nothing had to be done (attempt
    status ``skipped``, SPEC L-4)."""

    reason: str


class AbortReason:
    LEASE_LOST = "lease_lost"
    DEADLINE = "deadline_exceeded"
    SHUTDOWN = "shutdown"


class JobContext:
    """The execution context of one attempt."""

    def __init__(self, job: ClaimedJob, db: Database, clock: Clock) -> None:
        self.job = job
        self.db = db
        self.clock = clock
        self.abort = asyncio.Event()
        self.abort_reason: str | None = None
        self.side_effect_marked = False
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

    async def step(
        self,
        key: str,
        fn: Callable[[AsyncConnection], Awaitable[Any]],
        *,
        lock_first: Callable[[AsyncConnection], Awaitable[None]] | None = None,
    ) -> Any:
        """Run the internal step ``key`` once per operation: its business write
        and its receipt commit together; a retry returns the committed result.
        A step after :meth:`mark_side_effect` records the external write's
        outcome, so it also clears the marker (L-17): from then on the job is
        an ordinary one again."""
        result = await run_step(
            self.db,
            self.job.fence,
            self.job.operation_key,
            key,
            fn,
            now=self.clock.now,
            lock_first=lock_first,
            confirm_side_effect=self.side_effect_marked,
        )
        self.side_effect_marked = False
        return result

    async def mark_side_effect(self) -> None:
        """Record, before sending, that an unsafe external write is about to go
        out; from then on an unknown outcome dead-letters the job (L-17)."""
        await job_mark_side_effect(self.db, self.job.fence, now=self.clock.now())
        self.side_effect_marked = True
