"""Handlers of the outbound node jobs (SPEC L-2 pool
``workflow-ledger-outbound``): ``trigger_dispatch`` (X-1) and
``external_dispatch`` (X-2).

Each handler first looks, read-only, for the receipt of its success step (see
below: when it exists the call already went through and its answer was
applied, so the recorded result is returned and nothing is sent again), then
re-checks that its task still waits and its instance runs (L-22 leaves
trigger jobs alive and gates them here; anything else is ``skipped``), then
makes the call outside any transaction — through
:func:`~flowledger.outbound.job_calls.call_from_job` for ``kind: http`` or
the connector module for ``kind: connector`` — and applies the answer in a
fenced step receipt with the instance row locked first (L-13, L-14):

- success: a sync trigger writes its resultMapping and moves on; an async
  trigger records that it waits for ``POST /callbacks/trigger/{jobId}``; an
  external dispatch records that it was sent (the decision arrives by
  ``POST /callbacks/external/{taskId}``);
- a final failure — a PermanentError, or a RetryableError on the job's last
  attempt (``attempt >= maxAttempts``) — applies the node failure (trigger)
  or the dispatch fallback (external approval) in a step, then re-raises so
  the attempt and the job record the real error; earlier failures just
  re-raise and the ledger retries with backoff;
- an unknown outcome of an unsafe call (L-17, ``CallUnconfirmed``, or any
  failure after the side-effect marker) applies nothing: the job goes dead
  ``external_outcome_unconfirmed`` and the token stays at the node for an
  operator to retry, skip or force-jump.

Success steps (``trigger-result``, ``trigger-dispatched``, ``dispatched``)
are keyed by the operation only (L-14): a job rescued after its step committed
but before its settlement (a killed worker) finds the receipt and settles
``succeeded`` with the recorded result — no second request, the instance
advanced once, and Saga rollback (C-7) sees the node's succeeded job. The
operationKey changes with the payload, so a manual retry with a changed
request sends again. The step's receipt also clears the side-effect marker
(L-17), so the drain retries such a job instead of dead-lettering it.
Failure steps carry the job's generation and attempt: a manual retry keeps the
operationKey (same payload), and its own failure must not reuse the receipt of
an earlier generation's failure.

The external dispatch body is signed with ``FLOWLEDGER_CALLBACK_SECRET``
(when set) by the same scheme the callbacks use, so the external system can
verify that a task really comes from this flowledger.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_instances, workflow_tasks
from flowledger.engine import outbound_nodes, trigger_results
from flowledger.engine.async_steps import held_task
from flowledger.engine.facade import DEFAULT_TENANT, Engine
from flowledger.engine.job_types import EXTERNAL_DISPATCH, TRIGGER_DISPATCH
from flowledger.engine.node_failures import NodeFailure
from flowledger.engine.step import JobStepLock, Step
from flowledger.engine.tasks import SYSTEM
from flowledger.errors import (
    Deferred,
    ExternalOutcomeUnconfirmed,
    JobControlError,
    LeaseLostError,
    PermanentError,
    RetryableError,
)
from flowledger.handlers.engine_jobs import bind
from flowledger.outbound.connectors import call_connector
from flowledger.outbound.job_calls import OutboundRequest, OutboundResult, call_from_job
from flowledger.outbound.resources import Outbound
from flowledger.outbound.signing import sign_headers
from flowledger.settings import Settings
from flowledger.states import InstanceStatus, TaskStatus
from flowledger.worker import JobContext, Skip
from flowledger.worker.registry import Handler, define_handler


class TriggerResultMappingFailed(PermanentError):
    """The trigger's call succeeded but its resultMapping could not be applied."""

    code = "trigger_result_mapping_failed"


# success steps: keyed by the operation only (see the module docstring)
TRIGGER_RESULT = "trigger-result"
TRIGGER_DISPATCHED = "trigger-dispatched"
EXTERNAL_DISPATCHED = "dispatched"


def _ids(ctx: JobContext) -> tuple[int, int]:
    if ctx.job.instance_id is None or "taskId" not in ctx.payload:
        raise PermanentError(f"{ctx.job.type} job {ctx.job.id} names no instance or task")
    return ctx.job.instance_id, int(ctx.payload["taskId"])


async def _not_waiting(
    ctx: JobContext, instance_id: int, task_id: int, status: TaskStatus
) -> str | None:
    async with ctx.db.read() as conn:
        row = (
            await conn.execute(
                select(workflow_tasks.c.status, workflow_instances.c.status.label("instance"))
                .join(workflow_instances, workflow_instances.c.id == workflow_tasks.c.instance_id)
                .where(workflow_tasks.c.id == task_id, workflow_instances.c.id == instance_id)
            )
        ).first()
    if row is None:
        return f"task {task_id} not found"
    if row.instance != InstanceStatus.RUNNING:
        return f"instance is {row.instance}"
    if row.status != status:
        return f"task {task_id} is no longer {status.value}"
    return None


def attempt_key(ctx: JobContext, key: str) -> str:
    """``key`` qualified by the job's generation and attempt (failure steps)."""
    return f"{key}:g{ctx.job.generation}:a{ctx.job.attempt}"


async def recorded_success(ctx: JobContext, step_key: str) -> dict[str, Any] | None:
    """The committed result of this operation's success step, if any."""
    async with ctx.db.read() as conn:
        found, result = await ctx.ledger.receipt_get(conn, ctx.job.operation_key, step_key)
    return dict(result) if found else None


async def _in_step(
    ctx: JobContext,
    engine: Engine,
    instance_id: int,
    step_key: str,
    task_id: int,
    status: TaskStatus,
    body: Callable[[Step, Any, Any], Awaitable[dict[str, Any]]],
    *,
    recorded: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Run ``body(step, task, token)`` in a fenced receipt ``step_key``;
    ``{"skipped": reason}`` when the task no longer holds its token at
    ``status``. ``recorded`` is merged into the receipt's result."""

    lock = JobStepLock(engine.store, instance_id)

    async def run(conn: AsyncConnection) -> dict[str, Any]:
        step = await engine.open_step(
            conn, instance_id, actor=SYSTEM, now=ctx.clock.now(), job_id=ctx.job.id, locked=lock.row
        )
        found = await held_task(step, task_id, status)
        if isinstance(found, str):
            return {**(recorded or {}), "skipped": found}
        return {**(recorded or {}), **await body(step, *found)}

    result: dict[str, Any] = await ctx.step(step_key, run, lock_first=lock)
    return result


def final_failure(ctx: JobContext, exc: BaseException) -> NodeFailure | None:
    """The node failure that ``exc`` means for the job's node, or None when
    nothing may be applied: the ledger will retry, the executor lost the job,
    or the outcome of an unsafe write is unknown (L-17)."""
    if isinstance(exc, LeaseLostError | ExternalOutcomeUnconfirmed | Deferred) or ctx.aborted:
        return None  # (Deferred: nothing was attempted; the job runs again)
    if isinstance(exc, PermanentError):
        return NodeFailure(exc.code, str(exc), ctx.job.id, retries_exhausted=False)
    if not isinstance(exc, JobControlError) and ctx.side_effect_marked:
        return None  # an unclassified failure after the marker: L-17
    if ctx.job.attempt < ctx.job.max_attempts:
        return None
    code = exc.code if isinstance(exc, RetryableError) else type(exc).__name__
    return NodeFailure(code, str(exc), ctx.job.id, retries_exhausted=True)


async def _call(
    ctx: JobContext, spec: dict[str, Any], request: OutboundRequest, outbound: Outbound
) -> OutboundResult:
    if spec.get("kind") != "connector":
        return await call_from_job(ctx, request, client=outbound.client)
    result: OutboundResult = await call_connector(
        ctx,
        tenant_id=ctx.job.tenant_id or DEFAULT_TENANT,
        connector_key=str(spec.get("connectorId")),
        request=request,
        outbound=outbound,
    )
    return result


def _outbound_request(spec: dict[str, Any], **overrides: Any) -> OutboundRequest:
    values: dict[str, Any] = {
        "method": spec["method"],
        "url": spec["url"],
        "headers": dict(spec.get("headers") or {}),
        "body": spec.get("body"),
        "idempotent": bool(spec.get("idempotent")),
    }
    values.update(overrides)
    return OutboundRequest(**values)


# ----------------------------------------------------------------- trigger


def _trigger_result(outcome: dict[str, Any]) -> dict[str, Any]:
    """The job result of a trigger's applied success step (its receipt)."""
    if "skipped" in outcome:  # the call went through; there was nothing left to apply
        return {"status": outcome.get("status"), "notApplied": outcome["skipped"]}
    if "failed" in outcome:
        raise TriggerResultMappingFailed(str(outcome.get("error")))
    return outcome


async def trigger_dispatch(ctx: JobContext, engine: Engine, outbound: Outbound) -> Any:
    instance_id, task_id = _ids(ctx)
    spec: dict[str, Any] = ctx.payload["request"]
    success_key = TRIGGER_DISPATCHED if spec.get("mode") == "async" else TRIGGER_RESULT
    done = await recorded_success(ctx, success_key)
    if done is not None:  # applied by an earlier attempt whose settlement was lost
        return _trigger_result(done)
    reason = await _not_waiting(ctx, instance_id, task_id, TaskStatus.WAITING)
    if reason:
        return Skip(reason)
    try:
        result = await _call(ctx, spec, _outbound_request(spec), outbound)
    except Exception as exc:
        failure = final_failure(ctx, exc)
        if failure is not None:

            async def failed(step: Step, task: Any, token: Any) -> dict[str, Any]:
                await outbound_nodes.trigger_failed(step, task, token, failure)
                return {"failed": failure.code}

            key = attempt_key(ctx, "trigger-failed")
            await _in_step(ctx, engine, instance_id, key, task_id, TaskStatus.WAITING, failed)
        raise
    apply: Callable[[Step, Any, Any], Awaitable[dict[str, Any]]]
    if spec.get("mode") == "async":

        async def dispatched(step: Step, task: Any, _token: Any) -> dict[str, Any]:
            await outbound_nodes.trigger_dispatched(
                step, task, job_id=ctx.job.id, status=result.status
            )
            return {"awaitingCallback": True}

        apply = dispatched
    else:
        response = trigger_results.response_view(result.status, result.headers, result.body)

        async def succeeded(step: Step, task: Any, token: Any) -> dict[str, Any]:
            return await outbound_nodes.trigger_succeeded(
                step, task, token, job_id=ctx.job.id, response=response
            )

        apply = succeeded
    outcome = await _in_step(
        ctx,
        engine,
        instance_id,
        success_key,
        task_id,
        TaskStatus.WAITING,
        apply,
        recorded={"status": result.status},
    )
    return _trigger_result(outcome)


# ------------------------------------------------------- external approval


def _signed(spec: dict[str, Any], ctx: JobContext, settings: Settings) -> OutboundRequest:
    body = json.dumps(spec.get("body"), ensure_ascii=False, separators=(",", ":")).encode()
    headers = dict(spec.get("headers") or {})
    secret = settings.callback_secret
    if secret:
        headers.update(sign_headers(secret, int(ctx.clock.now().timestamp()), body))
    return _outbound_request(spec, headers=headers, body=body)


def _dispatch_result(outcome: dict[str, Any]) -> dict[str, Any]:
    """The job result of an external dispatch's applied success step."""
    if "skipped" in outcome:  # decided (or ended) before this attempt settled
        return {
            "status": outcome.get("status"),
            "dispatched": True,
            "notApplied": outcome["skipped"],
        }
    return outcome


async def external_dispatch(
    ctx: JobContext, engine: Engine, settings: Settings, outbound: Outbound
) -> Any:
    instance_id, task_id = _ids(ctx)
    done = await recorded_success(ctx, EXTERNAL_DISPATCHED)
    if done is not None:  # sent and recorded by an earlier attempt whose settlement was lost
        return _dispatch_result(done)
    reason = await _not_waiting(ctx, instance_id, task_id, TaskStatus.PENDING)
    if reason:
        return Skip(reason)
    spec: dict[str, Any] = ctx.payload["request"]
    try:
        result = await _call(ctx, spec, _signed(spec, ctx, settings), outbound)
    except Exception as exc:
        failure = final_failure(ctx, exc)
        if failure is not None:

            async def fallback(step: Step, task: Any, token: Any) -> dict[str, Any]:
                applied = await outbound_nodes.external_dispatch_failed(step, task, token, failure)
                return {"fallback": applied}

            key = attempt_key(ctx, "dispatch-failed")
            await _in_step(ctx, engine, instance_id, key, task_id, TaskStatus.PENDING, fallback)
        raise

    async def dispatched(step: Step, task: Any, _token: Any) -> dict[str, Any]:
        await outbound_nodes.external_dispatched(
            step, task, job_id=ctx.job.id, status=result.status
        )
        return {"dispatched": True}

    outcome = await _in_step(
        ctx,
        engine,
        instance_id,
        EXTERNAL_DISPATCHED,
        task_id,
        TaskStatus.PENDING,
        dispatched,
        recorded={"status": result.status},
    )
    return _dispatch_result(outcome)


def handlers(engine: Engine, settings: Settings, outbound: Outbound) -> list[Handler]:
    """``trigger_dispatch`` and ``external_dispatch``, bound to ``engine``
    and calling out through ``outbound``."""

    async def trigger(ctx: JobContext, engine: Engine) -> Any:
        return await trigger_dispatch(ctx, engine, outbound)

    async def external(ctx: JobContext, engine: Engine) -> Any:
        return await external_dispatch(ctx, engine, settings, outbound)

    return [
        define_handler(TRIGGER_DISPATCH, bind(engine, trigger)),
        define_handler(EXTERNAL_DISPATCH, bind(engine, external)),
    ]
