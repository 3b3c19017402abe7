"""What an outbound call needs from the attempt it runs in — a narrow
protocol, so ``outbound/`` and ``notify/`` never import the worker: the
job's identity (for logs and the connector call records), the database and
clock, the abort signal (SPEC L-10, L-11), the stable idempotency key
(L-16), the marker written before an unsafe write leaves (L-17) and where
the latest request/response records go (X-4). The worker's
:class:`~flowledger.worker.context.JobContext` is one."""

from __future__ import annotations

import asyncio
from typing import Any, Protocol

from flowledger.clock import Clock
from flowledger.db.database import Database


class AttemptJob(Protocol):
    @property
    def id(self) -> int: ...

    @property
    def trace_id(self) -> str: ...

    @property
    def instance_id(self) -> int | None: ...


class CallAttempt(Protocol):
    @property
    def job(self) -> AttemptJob: ...

    @property
    def db(self) -> Database: ...

    @property
    def clock(self) -> Clock: ...

    @property
    def abort(self) -> asyncio.Event: ...

    @property
    def abort_reason(self) -> str | None: ...

    @property
    def aborted(self) -> bool: ...

    @property
    def idempotency_key(self) -> str: ...

    def record_exchange(
        self, request: dict[str, Any] | None, response: dict[str, Any] | None
    ) -> None: ...

    async def mark_side_effect(self) -> None: ...
