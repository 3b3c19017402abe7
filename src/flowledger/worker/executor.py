"""Runs one claimed job's handler and turns what happened into an
:class:`~flowledger.ledger.models.Outcome` (or None when the executor lost
the job and must write nothing).

Classification: return value → success (``Skip`` → skipped);
RetryableError → retry; PermanentError → dead; ExternalOutcomeUnconfirmed →
the L-17 dead letter; LeaseLostError or an abort for a lost lease → nothing;
an attempt its step already settled (``JobContext.step(completes=…)``) →
nothing;
deadline abort → retry (or unconfirmed after a side-effect marker); any other
exception → retry, except after a side-effect marker, where the outcome of the
external write is unknown and the job goes to the unconfirmed dead letter.
An unknown job type goes dead with a clear error; it never crashes the worker.

Outbound calls leave their request and response records on the outcome, and
so on the attempt row: those carried by the raised error, else the context's
latest recorded exchange (``JobContext.exchange``).
"""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import structlog
from sqlalchemy.exc import DBAPIError, MissingGreenlet

from flowledger.errors import (
    Deferred,
    ExternalOutcomeUnconfirmed,
    LeaseLostError,
    PermanentError,
    RetryableError,
)
from flowledger.ledger.models import Outcome
from flowledger.worker.context import AbortReason, JobContext, result_outcome
from flowledger.worker.registry import Handler

log = structlog.get_logger("flowledger.worker")


def _aborted_outcome(ctx: JobContext) -> Outcome | None:
    if ctx.abort_reason == AbortReason.LEASE_LOST:
        return None
    if ctx.abort_reason == AbortReason.SHUTDOWN:
        if ctx.side_effect_marked:
            return Outcome.unconfirmed("worker shut down during an unsafe external call")
        return Outcome.released("worker shut down before the handler finished")
    message = "execution deadline passed; the handler was aborted"
    if ctx.side_effect_marked:
        return Outcome.unconfirmed(message)
    return Outcome.retry(message, code="deadline_exceeded")


def exchange_of(error: BaseException) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """The ``.request`` / ``.response`` records an outbound error carries."""
    try:  # httpx errors raise RuntimeError for an unset .request
        request = getattr(error, "request", None)
        response = getattr(error, "response", None)
    except RuntimeError:
        return None, None
    return (
        request if isinstance(request, dict) else None,
        response if isinstance(response, dict) else None,
    )


def _with_exchange(
    ctx: JobContext, outcome: Outcome | None, exc: BaseException | None = None
) -> Outcome | None:
    """``outcome`` with the request/response records of the job's outbound call."""
    if outcome is None or outcome.request is not None or outcome.response is not None:
        return outcome
    request, response = exchange_of(exc) if exc is not None else (None, None)
    if request is None and response is None:
        request, response = ctx.exchange
    if request is None and response is None:
        return outcome
    return dataclasses.replace(outcome, request=request, response=response)


def _error_outcome(ctx: JobContext, exc: BaseException) -> Outcome | None:
    return _with_exchange(ctx, _classify_error(ctx, exc), exc)


def _classify_error(ctx: JobContext, exc: BaseException) -> Outcome | None:
    if isinstance(exc, LeaseLostError):
        return None
    if isinstance(exc, ExternalOutcomeUnconfirmed):
        return Outcome.unconfirmed(str(exc))
    if isinstance(exc, PermanentError):
        return Outcome.dead(str(exc), code=exc.code)
    if isinstance(exc, Deferred):
        return Outcome.deferred(str(exc), code=exc.code, delay_ms=exc.next_retry_delay_ms)
    if isinstance(exc, RetryableError):
        return Outcome.retry(str(exc), code=exc.code, delay_ms=exc.next_retry_delay_ms)
    message = f"{type(exc).__name__}: {exc}"
    if ctx.side_effect_marked:
        return Outcome.unconfirmed(message)
    if _connection_lost(exc):  # issue 17 item 12: a restart is not the handler's fault
        detail = (
            "the pool discarded a connection the server dropped"
            if isinstance(exc, MissingGreenlet)
            else (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        )
        return Outcome.retry(f"database connection lost: {detail}", code="database_unavailable")
    return Outcome.retry(message, code=type(exc).__name__)


def _connection_lost(exc: BaseException) -> bool:
    """A dropped database connection: a DBAPI error SQLAlchemy read as a
    disconnect, or the ``MissingGreenlet`` its async pool raises while
    discarding such a connection during a PostgreSQL restart."""
    if isinstance(exc, MissingGreenlet):
        return True
    return isinstance(exc, DBAPIError) and bool(exc.connection_invalidated)


async def _until_done_or_aborted(ctx: JobContext, task: asyncio.Future[Any]) -> None:
    """Wait until the handler's task finishes or the attempt is aborted: one
    future woken by either (``asyncio.wait`` on the task and a task waiting
    for the abort event cost two tasks and two callback sets per job)."""
    if ctx.aborted:
        return
    woken: asyncio.Future[None] = asyncio.get_running_loop().create_future()

    def wake(*_: object) -> None:
        if not woken.done():
            woken.set_result(None)

    task.add_done_callback(wake)
    ctx.on_abort.append(wake)
    try:
        await woken
    finally:
        task.remove_done_callback(wake)
        ctx.on_abort.remove(wake)


async def execute(
    ctx: JobContext, handler: Handler | None, *, abort_grace_s: float
) -> Outcome | None:
    """Run the handler; on abort give it ``abort_grace_s`` to return, then
    cancel it. None also when the attempt already settled in its own step
    (``JobContext.step(completes=…)``): there is nothing left to write."""
    outcome = await _run(ctx, handler, abort_grace_s=abort_grace_s)
    if ctx.settled:
        return None
    return _with_exchange(ctx, outcome)


async def _run(ctx: JobContext, handler: Handler | None, *, abort_grace_s: float) -> Outcome | None:
    if handler is None:
        return Outcome.dead(
            f"no handler is registered for job type {ctx.job.type!r} in this worker "
            "(start it with --import for the module that registers it)",
            code="unknown_job_type",
        )
    task = asyncio.ensure_future(handler.fn(ctx))
    if not task.done():
        await _until_done_or_aborted(ctx, task)
        if not task.done():
            done, _ = await asyncio.wait({task}, timeout=abort_grace_s)
            if not done:
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)
    if task.cancelled():
        return _aborted_outcome(ctx)
    exc = task.exception()
    if ctx.abort_reason == AbortReason.LEASE_LOST:
        return None  # someone else owns the job now: write nothing
    if ctx.aborted:
        # Past the hard deadline (L-11) or released at shutdown: a handler that
        # returned on the abort gave up, so its return value is no success.
        return _aborted_outcome(ctx)
    if exc is None:
        return result_outcome(task.result())
    log.info(
        "job_failed",
        job_id=ctx.job.id,
        type=ctx.job.type,
        error=str(exc),
        trace_id=ctx.job.trace_id,
    )
    return _error_outcome(ctx, exc)
