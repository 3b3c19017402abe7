"""The engine side of the outbound nodes after their job's call: ``trigger``
(SPEC X-1) and ``external_approval`` (X-2). Entering the nodes (the task,
the rendered call, the dispatch job) is :mod:`flowledger.engine.nodes.outbound`,
a node kind below the runner; these functions run the tokens on with
:func:`~flowledger.engine.runner.run`, so they sit above it.

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
from flowledger.engine.moves import leave
from flowledger.engine.node_failures import NodeFailure, node_failed
from flowledger.engine.step import Step
from flowledger.engine.tasks import SYSTEM, create_task, finish_task, resolve_assignees
from flowledger.engine.tokens import Token
from flowledger.engine.trigger_results import map_result
from flowledger.states import InstanceStatus, TaskStatus

ADMIN = "admin"
TRIGGER_CALLBACK_PATH = "/api/workflows/callbacks/trigger/{job_id}"


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
    await runner.run(step, await leave(step, token, node))
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
    await runner.run(step, await leave(step, token, node))


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
