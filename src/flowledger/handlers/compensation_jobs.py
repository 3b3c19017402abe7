"""Handler of ``compensation_action`` jobs (SPEC C-4, C-5, C-6): runs the
action of the job's payload (see :mod:`flowledger.compensation.runners`)
and keeps the ticket's ``compensationActionStatus`` in step with it, each
change with an ``action_result`` history row:

==========================================  ==============================
when                                        ticket action status
==========================================  ==============================
an attempt starts                           running
it succeeds                                 succeeded (in the same
                                            transaction as the result's
                                            step receipt)
it fails and the ledger will retry it       pending
it fails for good: last attempt, a          failed
permanent error, or an external outcome
that is unconfirmed (L-17)
==========================================  ==============================

Success neither closes a pending ticket nor touches its repair task (C-5).
Every write is fenced by the job's lease (instance row locked first, then
the job, then the ticket: L-13), so an executor that lost its job writes
nothing. A run that finds the result's receipt (the worker died after the
success committed) returns the stored result without acting again. When the
ticket has moved on to a newer job (an operator retry), an older job's runs
only add history rows.
"""

from __future__ import annotations

from contextlib import suppress
from typing import Any

from pydantic import ValidationError
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.actions.runner import SYSTEM_ACTOR, outcome
from flowledger.compensation import runners
from flowledger.compensation.actions import COMPENSATION_ACTION_TYPE
from flowledger.compensation.tickets import add_log, get_ticket, set_action_status
from flowledger.db.compensation_schema import ActionStatus, LogKind
from flowledger.definitions.model import CompensationAction
from flowledger.engine.errors import InstanceNotFound
from flowledger.engine.facade import Engine
from flowledger.engine.step import lock_instance
from flowledger.errors import (
    Deferred,
    ExternalOutcomeUnconfirmed,
    LeaseLostError,
    PermanentError,
    RetryableError,
)
from flowledger.handlers.engine_jobs import bind
from flowledger.outbound.resources import Outbound
from flowledger.settings import Settings
from flowledger.worker import JobContext
from flowledger.worker.registry import Handler, define_handler

RESULT_STEP = "compensation_result"


def _run_of(ctx: JobContext) -> runners.ActionRun:
    payload = ctx.payload
    try:
        ticket_id = int(payload["ticketId"])
        instance_id = int(ctx.job.instance_id or payload["instanceId"])
        action = CompensationAction.model_validate(payload["action"])
    except (KeyError, TypeError, ValueError, ValidationError) as exc:
        raise PermanentError(f"not a compensation_action payload: {exc}") from None
    return runners.ActionRun(
        ticket_id=ticket_id,
        instance_id=instance_id,
        tenant_id=str(ctx.job.tenant_id or ""),
        node_key=str(payload.get("nodeKey") or ctx.job.node_key or ""),
        error=payload.get("error"),
        action=action,
    )


def _final(ctx: JobContext, exc: BaseException) -> bool:
    """Whether the ledger settles this failure for good (mirrors the executor)."""
    if isinstance(exc, Deferred):  # nothing was attempted; it runs again
        return False
    if isinstance(exc, PermanentError | ExternalOutcomeUnconfirmed):
        return True
    if ctx.side_effect_marked and not isinstance(exc, RetryableError):
        return True
    return ctx.job.attempt >= ctx.job.max_attempts


async def _write_status(
    conn: AsyncConnection,
    ctx: JobContext,
    run: runners.ActionRun,
    status: ActionStatus,
    message: str | None,
    detail: dict[str, Any],
) -> None:
    ticket = await get_ticket(conn, run.ticket_id, lock=True)
    if ticket is None:
        raise PermanentError(f"compensation ticket {run.ticket_id} does not exist")
    detail = {"jobId": ctx.job.id, "attempt": ctx.job.attempt, **detail}
    now = ctx.clock.now()
    if ticket["action_job_id"] == ctx.job.id:
        await set_action_status(
            conn, run.ticket_id, status, actor=SYSTEM_ACTOR, now=now, message=message, detail=detail
        )
        return
    # an older job of the ticket (a newer one was enqueued by a retry)
    await add_log(
        conn,
        run.ticket_id,
        kind=LogKind.ACTION_RESULT,
        actor=SYSTEM_ACTOR,
        now=now,
        message=message,
        detail={"status": status.value, "staleJob": True, **detail},
    )


async def _mark(
    ctx: JobContext,
    run: runners.ActionRun,
    status: ActionStatus,
    message: str | None,
    detail: dict[str, Any],
) -> None:
    """A fenced status write of its own (instance, job, ticket locked in order)."""
    async with ctx.db.begin() as conn:
        try:
            await lock_instance(conn, run.instance_id)
        except InstanceNotFound:
            raise PermanentError(f"instance {run.instance_id} does not exist") from None
        await ctx.ledger.job_lock_fenced(conn, ctx.job.fence, now=ctx.clock.now())
        await _write_status(conn, ctx, run, status, message, detail)


async def compensation_action(
    ctx: JobContext, engine: Engine, settings: Settings, outbound: Outbound
) -> Any:
    run = _run_of(ctx)
    async with ctx.db.read() as conn:
        found, stored = await ctx.ledger.receipt_get(conn, ctx.job.operation_key, RESULT_STEP)
    if found:
        return outcome(stored)
    attempt = f"attempt {ctx.job.attempt} of {ctx.job.max_attempts}"
    await _mark(ctx, run, ActionStatus.RUNNING, f"{run.action.type} action: {attempt} started", {})

    async def lock(conn: AsyncConnection) -> None:
        await lock_instance(conn, run.instance_id)

    try:
        external = None
        if run.action.type != "updateData":
            external = await runners.call_external(ctx, run, settings, outbound)

        async def finish(conn: AsyncConnection) -> dict[str, Any]:
            if external is not None:
                result = external
            else:
                result = await runners.update_data(conn, ctx, run, engine)
            message = f"{run.action.type} action succeeded ({attempt})"
            status = ActionStatus.SUCCEEDED
            if result.get("skipped"):
                # nothing was written: the operator must not read it as undone
                message = f"{run.action.type} action not applied: {result['skipped']}"
                status = ActionStatus.FAILED
            await _write_status(conn, ctx, run, status, message, {"result": result})
            return result

        result = await ctx.step(RESULT_STEP, finish, lock_first=lock)
    except Exception as exc:
        if not isinstance(exc, LeaseLostError):
            final = _final(ctx, exc)
            status = ActionStatus.FAILED if final else ActionStatus.PENDING
            code = getattr(exc, "code", type(exc).__name__)
            detail = {"final": final, "code": code}
            with suppress(LeaseLostError):  # the job is someone else's now: write nothing
                await _mark(ctx, run, status, f"{attempt} failed: {exc}", detail)
        raise
    return outcome(result)


def handlers(engine: Engine, settings: Settings, outbound: Outbound) -> list[Handler]:
    """``compensation_action``, bound to ``engine``, ``settings`` and ``outbound``."""

    async def action(ctx: JobContext, engine: Engine) -> Any:
        return await compensation_action(ctx, engine, settings, outbound)

    return [define_handler(COMPENSATION_ACTION_TYPE, bind(engine, action))]
