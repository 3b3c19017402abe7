"""The rate limit and the circuit breaker of each connector (SPEC X-3).

State is **per process** (kept by the runtime's
:class:`~flowledger.outbound.resources.Outbound`, one set per event loop,
and a worker process runs one):
N worker processes allow up to N times a connector's rate, and each has its own
breaker, which opens after the failures *it* saw. Nothing is shared through
the database — a shared limiter would need a round trip (and a lock) per
call. For a hard global limit, run the connector's jobs on one worker.

Libraries (maintained, small, asyncio-native):

- rate limit: ``aiolimiter.AsyncLimiter`` — a leaky bucket, which is the
  "requests per second + burst" shape exactly: capacity ``burst``, drained
  at ``requestsPerSecond`` (``AsyncLimiter(burst, burst / rps)``). Its
  ``has_capacity()`` answers without waiting, so a limited call is refused
  at once instead of holding an execution slot; the refusal says when to
  come back: at most ``1 / rps`` seconds, the time one unit takes to drain.
  (``limits`` was the other candidate; its windows are whole seconds, which
  cannot express e.g. 10/s with a burst of 1.)
- circuit breaker: ``purgatory`` — async-first (``async with breaker:``),
  in-memory per process, and its exclusion predicate lets a clear answer
  count as a success. (``pybreaker`` was the other candidate; its async
  support is built on Tornado.) ``failureThreshold`` consecutive failures
  open the circuit; after ``resetTimeoutS`` it is half-open: calls go
  through again, the first success closes it, a failure reopens it.

What the breaker counts (the call path decides, :func:`counts_as_failure`):
5xx, 408, 429, no response and not connected are failures (the outbound
errors ``CallFailed`` / ``CallUnconfirmed``); any answer — 2xx, 3xx, other
4xx — is a success. A call refused by the SSRF guard never reached the
target and counts as nothing at all (issue 17 item 13): purgatory has no
neutral outcome, so :func:`breaker_call` leaves the breaker's exit out for
it (a success would reset the failure count and close a half-open circuit).

Both libraries read the real clock (the loop's monotonic time and
``time.time()``), not the job's injectable clock: tests use short real
windows. A connector whose limits are changed gets a fresh limiter or
breaker (its state key includes the settings).
"""

from __future__ import annotations

import math
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING

from aiolimiter import AsyncLimiter
from purgatory import AsyncCircuitBreakerFactory
from purgatory.domain.model import OpenedState

from flowledger.outbound.connector_config import BreakerSettings, RateLimit
from flowledger.outbound.job_calls import CallFailed, CallUnconfirmed
from flowledger.outbound.ssrf import OutboundRefused

if TYPE_CHECKING:
    from purgatory.service._async.circuitbreaker import AsyncCircuitBreaker

__all__ = [
    "ConnectorGuards",
    "OpenedState",
    "breaker_call",
    "counts_as_failure",
    "reopen_delay_ms",
]


def counts_as_failure(exc: BaseException) -> bool:
    """Whether an outcome of a connector call is a failure for its breaker."""
    return isinstance(exc, CallFailed | CallUnconfirmed)


class ConnectorGuards:
    """The limiters and breakers of one event loop."""

    def __init__(self) -> None:
        self._limiters: dict[tuple[int, float, int], AsyncLimiter] = {}
        self._breakers = AsyncCircuitBreakerFactory(
            exclude=[(BaseException, lambda exc: not counts_as_failure(exc))]
        )

    async def acquire(self, connector_id: int, limit: RateLimit | None) -> int | None:
        """Take one call from the connector's rate limit: None when allowed,
        else the delay (ms) after which a call will be allowed."""
        if limit is None:
            return None
        key = (connector_id, limit.requests_per_second, limit.burst)
        limiter = self._limiters.get(key)
        if limiter is None:
            period = limit.burst / limit.requests_per_second
            limiter = self._limiters[key] = AsyncLimiter(limit.burst, period)
        if not limiter.has_capacity():
            return max(1, math.ceil(1000 / limit.requests_per_second))
        await limiter.acquire()  # has capacity: returns without waiting
        return None

    async def breaker(self, connector_id: int, settings: BreakerSettings) -> AsyncCircuitBreaker:
        """The connector's breaker: ``async with`` it around the call; entering
        an open breaker raises :class:`OpenedState`."""
        name = f"{connector_id}:{settings.failure_threshold}:{settings.reset_timeout_s}"
        return await self._breakers.get_breaker(
            name, settings.failure_threshold, settings.reset_timeout_s
        )


@asynccontextmanager
async def breaker_call(breaker: AsyncCircuitBreaker) -> AsyncIterator[None]:
    """``async with breaker`` — except that an SSRF refusal is not counted:
    the state change of entering (open → half-open) is kept, the outcome is
    not recorded."""
    await breaker.__aenter__()
    try:
        yield
    except OutboundRefused:
        while breaker.context.messages:  # only what entering queued
            await breaker.messagebus.handle(breaker.context.messages.pop(0), breaker.uow)
        raise
    except BaseException as exc:
        await breaker.__aexit__(type(exc), exc, exc.__traceback__)
        raise
    else:
        await breaker.__aexit__(None, None, None)


def reopen_delay_ms(opened: OpenedState, settings: BreakerSettings) -> int:
    """Milliseconds until an open breaker lets a trial call through."""
    remaining = opened.opened_at + settings.reset_timeout_s - time.time()
    return max(1, math.ceil(remaining * 1000) + 1)
