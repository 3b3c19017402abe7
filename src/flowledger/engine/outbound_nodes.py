"""The engine side of the outbound nodes: ``trigger`` (SPEC X-1) and
``external_approval`` (X-2).

Entering a node (inside the running step):

- **trigger** — a ``trigger`` task, ``waiting``, assignee ``system``, holds the
  token; a ``trigger_dispatch`` job (idempotencyKey ``trigger:<taskId>``)
  carries the call *rendered now* from the form (method, url, headers, body,
  idempotent, kind, connectorId, mode, resultMapping), so a retry resends the
  same request with the same ``X-Idempotency-Key``. Its budget is
  ``maxRetries + 1`` attempts; unset, ``maxRetries`` is 0 under ``onFailure:
  continue`` (fail fast and pass) and 3 otherwise (4 attempts, the same
  default as compensation actions, C-5).
- **external_approval** — an ``external_approval`` task, ``pending``,
  assignee ``external``, and an ``external_dispatch`` job (idempotencyKey
  ``external:<taskId>``, budget ``maxRetries + 1`` or the type's 5) whose
  JSON body carries ``taskId``, ``instanceId``, ``nodeKey``,
  ``definitionKey``, ``callbackPath`` and ``decisions``; a ``bodyTemplate``
  rendering to a JSON object adds its keys (ours win), any other rendering
  goes under ``data``.

A call that cannot be rendered (:mod:`~flowledger.engine.outbound_requests`:
a URL the SSRF guard refuses by its syntax, a header that cannot be sent) is
a node failure at once (``trigger_call_invalid`` /
``external_dispatch_invalid``).

After the job's call (each inside the handler's step, instance locked, state
re-checked — a task no longer waiting or an instance no longer running makes
it a no-op that reports why):

- :func:`trigger_succeeded` — ``resultMapping``
  (:mod:`~flowledger.engine.trigger_results`) is written into the form, the task is
  completed and the token moves on. A mapping that fails to evaluate or does
  not fit the form schema is a node failure (``trigger_result_mapping_failed``).
- :func:`trigger_failed` — the task ends (completed, action ``reject``) and
  the node fails through :func:`~flowledger.engine.node_failures.node_failed`.
- :func:`external_dispatch_failed` — ``dispatchFallback`` (default ``fail``):
  ``fail`` cancels the task and fails the node; ``auto_approve`` /
  ``auto_reject`` decide as the system and record the decision (a late
  callback then answers with it); ``manual`` skips the external task and gives
  approval tasks at the node to its assignees (or ``admin``), who decide
  through the normal task API.

Unknown outcomes of unsafe calls (L-17) never reach these functions: the job
goes dead and the token stays at the node for an operator.
"""

from __future__ import annotations

from typing import Any

from flowledger.definitions.expressions import ExpressionError
from flowledger.definitions.model import Node
from flowledger.engine import callback_records, lifecycle, runner
from flowledger.engine.errors import FormInvalidError
from flowledger.engine.forms import write_form
from flowledger.engine.job_types import engine_job_type
from flowledger.engine.node_failures import NodeFailure, node_failed
from flowledger.engine.outbound_requests import (
    HeaderInvalid,
    render_call,
    render_dispatch,
    template_values,
    trigger_max_attempts,
)
from flowledger.engine.step import Step
from flowledger.engine.tasks import SYSTEM, create_task, finish_task, resolve_assignees
from flowledger.engine.tokens import Token
from flowledger.engine.trigger_results import map_result
from flowledger.ledger.enqueue import enqueue
from flowledger.ledger.models import JobSpec
from flowledger.outbound.ssrf import OutboundRefused
from flowledger.states import InstanceStatus, TaskStatus

EXTERNAL = "external"
ADMIN = "admin"
TRIGGER_CALLBACK_PATH = "/api/workflows/callbacks/trigger/{job_id}"


async def _enqueue(
    step: Step,
    job_type: str,
    *,
    task_id: int,
    node: Node,
    payload: dict[str, Any],
    idempotency_key: str,
    max_attempts: int | None,
) -> int:
    result = await enqueue(
        step.conn,
        JobSpec(
            type=engine_job_type(job_type),
            payload=payload,
            max_attempts=max_attempts,
            idempotency_key=idempotency_key,
            trace_id=step.trace_id,
            tenant_id=step.instance["tenant_id"],
            instance_id=step.instance_id,
            task_id=task_id,
            node_key=node.key,
        ),
        now=step.now,
    )
    await step.trace(
        "job_enqueued",
        node_key=node.key,
        task_id=task_id,
        job_id=result.job_id,
        detail={"type": job_type},
    )
    return result.job_id


# ---------------------------------------------------------------- node entry


async def enter_trigger(step: Step, token: Token, node: Node) -> list[Token]:
    assert node.call is not None
    task_id = await create_task(
        step,
        node_key=node.key,
        token_id=token.id,
        kind="trigger",
        status=TaskStatus.WAITING,
        assignee=SYSTEM,
    )
    try:
        request = render_call(node.call, template_values(step, node, task_id))
    except (OutboundRefused, HeaderInvalid) as exc:
        await finish_task(
            step, task_id, status=TaskStatus.COMPLETED, action="reject", comment=str(exc), by=SYSTEM
        )
        failure = NodeFailure("trigger_call_invalid", str(exc), None, retries_exhausted=False)
        return await node_failed(step, token, node, failure)
    await _enqueue(
        step,
        "trigger_dispatch",
        task_id=task_id,
        node=node,
        payload={"taskId": task_id, "request": request},
        idempotency_key=f"trigger:{task_id}",
        max_attempts=trigger_max_attempts(node),
    )
    return []


async def enter_external(step: Step, token: Token, node: Node) -> list[Token]:
    task_id = await create_task(
        step,
        node_key=node.key,
        token_id=token.id,
        kind="external_approval",
        status=TaskStatus.PENDING,
        assignee=EXTERNAL,
    )
    try:
        request = render_dispatch(step, node, task_id)
    except (OutboundRefused, HeaderInvalid) as exc:
        await finish_task(
            step, task_id, status=TaskStatus.CANCELED, action=None, comment=str(exc), by=SYSTEM
        )
        failure = NodeFailure("external_dispatch_invalid", str(exc), None, retries_exhausted=False)
        return await node_failed(step, token, node, failure)
    await _enqueue(
        step,
        "external_dispatch",
        task_id=task_id,
        node=node,
        payload={"taskId": task_id, "request": request},
        idempotency_key=f"external:{task_id}",
        max_attempts=None if node.max_retries is None else node.max_retries + 1,
    )
    return []


async def trigger_succeeded(
    step: Step, task: Any, token: Token, *, job_id: int, response: dict[str, Any]
) -> dict[str, Any]:
    """Write the mapped result, complete the task, move on. Returns
    ``{"done": True}`` or ``{"failed": code, "error": message}`` when the
    mapping failed (the node failed)."""
    node = step.defn.node(task.node_key)
    mapping = node.call.result_mapping if node.call is not None else {}
    try:
        changes = map_result(mapping, step.form, response)
        await write_form(step, changes, source=f"trigger:{job_id}")
    except (ExpressionError, FormInvalidError) as exc:
        failure = NodeFailure(
            "trigger_result_mapping_failed", exc.message, job_id, retries_exhausted=False
        )
        await trigger_failed(step, task, token, failure)
        return {"failed": failure.code, "error": failure.message}
    await finish_task(step, task.id, status=TaskStatus.COMPLETED, action="handle", by=SYSTEM)
    await step.trace(
        "trigger_succeeded",
        node_key=node.key,
        task_id=task.id,
        job_id=job_id,
        detail={"status": response.get("status"), "fields": sorted(changes)},
    )
    await step.emit(
        "trigger.succeeded",
        {"taskId": task.id, "nodeKey": node.key, "jobId": job_id, "fields": sorted(changes)},
    )
    await runner.run(step, await runner.leave(step, token, node))
    return {"done": True}


async def trigger_dispatched(step: Step, task: Any, *, job_id: int, status: int) -> None:
    """An async trigger's call was accepted; the task waits for its callback."""
    await step.trace(
        "trigger_dispatched",
        node_key=task.node_key,
        task_id=task.id,
        job_id=job_id,
        detail={"status": status, "callbackPath": TRIGGER_CALLBACK_PATH.format(job_id=job_id)},
    )
    await step.emit(
        "trigger.dispatched", {"taskId": task.id, "nodeKey": task.node_key, "jobId": job_id}
    )


async def trigger_failed(step: Step, task: Any, token: Token, failure: NodeFailure) -> None:
    node = step.defn.node(task.node_key)
    await finish_task(
        step,
        task.id,
        status=TaskStatus.COMPLETED,
        action="reject",
        comment=failure.message,
        by=SYSTEM,
    )
    await step.emit(
        "trigger.failed",
        {
            "taskId": task.id,
            "nodeKey": node.key,
            "jobId": failure.job_id,
            "code": failure.code,
            "error": failure.message,
            "retriesExhausted": failure.retries_exhausted,
        },
    )
    await runner.run(step, await node_failed(step, token, node, failure))


# --------------------------------------------------------- external decisions


async def decide_external(
    step: Step,
    task: Any,
    token: Token,
    decision: str,
    *,
    comment: str | None,
    by: str,
    source: str,
) -> None:
    """Complete an external approval task with ``decision`` (approve moves
    on, reject rejects the instance, E-6)."""
    node = step.defn.node(task.node_key)
    await finish_task(
        step, task.id, status=TaskStatus.COMPLETED, action=decision, comment=comment, by=by
    )
    await step.emit(
        "external.decided",
        {
            "taskId": task.id,
            "nodeKey": node.key,
            "decision": decision,
            "decidedBy": by,
            "source": source,
        },
    )
    if decision == "reject":
        await lifecycle.finish(step, InstanceStatus.REJECTED, reason=comment)
        return
    await runner.run(step, await runner.leave(step, token, node))


async def external_dispatched(step: Step, task: Any, *, job_id: int, status: int) -> None:
    await step.trace(
        "external_dispatched",
        node_key=task.node_key,
        task_id=task.id,
        job_id=job_id,
        detail={"status": status},
    )
    await step.emit(
        "external.dispatched", {"taskId": task.id, "nodeKey": task.node_key, "jobId": job_id}
    )


async def external_dispatch_failed(
    step: Step, task: Any, token: Token, failure: NodeFailure
) -> str:
    """Apply the node's ``dispatchFallback``; returns the fallback applied."""
    node = step.defn.node(task.node_key)
    fallback = node.dispatch_fallback or "fail"
    await step.trace(
        "external_dispatch_failed",
        node_key=node.key,
        task_id=task.id,
        job_id=failure.job_id,
        detail={"code": failure.code, "error": failure.message, "fallback": fallback},
    )
    await step.emit(
        "external.dispatch_failed",
        {
            "taskId": task.id,
            "nodeKey": node.key,
            "jobId": failure.job_id,
            "code": failure.code,
            "error": failure.message,
            "fallback": fallback,
        },
    )
    if fallback in ("auto_approve", "auto_reject"):
        decision = "approve" if fallback == "auto_approve" else "reject"
        comment = f"[dispatch failed] auto-{decision}d: {failure.message}"
        await callback_records.add_record(
            step,
            kind=callback_records.EXTERNAL,
            subject_id=task.id,
            task_id=task.id,
            outcome=decision,
            source="dispatch_fallback",
            decided_by=SYSTEM,
            comment=comment,
        )
        await decide_external(
            step, task, token, decision, comment=comment, by=SYSTEM, source="dispatch_fallback"
        )
    elif fallback == "manual":
        await _hand_to_people(step, task, token, node, failure)
    else:
        await finish_task(
            step,
            task.id,
            status=TaskStatus.CANCELED,
            action=None,
            comment=f"[dispatch failed] {failure.message}",
            by=SYSTEM,
        )
        await runner.run(step, await node_failed(step, token, node, failure))
    return fallback


async def _hand_to_people(
    step: Step, task: Any, token: Token, node: Node, failure: NodeFailure
) -> None:
    try:
        people = await resolve_assignees(step, node.assignees)
    except ExpressionError:
        people = []
    people = people or [ADMIN]
    await finish_task(
        step,
        task.id,
        status=TaskStatus.SKIPPED,
        action=None,
        comment=f"[dispatch failed] handed to {', '.join(people)}: {failure.message}",
        by=SYSTEM,
    )
    for person in people:
        await create_task(
            step,
            node_key=node.key,
            token_id=token.id,
            kind="approval",
            status=TaskStatus.PENDING,
            assignee=person,
        )
