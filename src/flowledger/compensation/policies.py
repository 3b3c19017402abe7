"""Failure policies of trigger and subprocess nodes (SPEC C-1, C-2, C-3).

:func:`apply_failure_policy` is the engine's node-failure hook
(:mod:`flowledger.engine.node_failures`); :func:`compensation_hooks` is the
:class:`~flowledger.engine.hooks.EngineHooks` value that carries it, which
the runtime gives the engine it builds (:mod:`flowledger.runtime`). It runs inside the
failing step, after the node's own wait task was closed, with the token
still active at the failed node, and only once the failure is final (a
permanent error, the attempt budget spent, or a failure callback). An
unsafe write with an unknown outcome (L-17) never gets here.

Which action applies (C-1): ``failurePolicy.action``; else a trigger's
``onFailure`` (continue / retry); else none — the hook returns ``None`` and
the engine follows the node's exception edge to a catch node, or leaves the
token at the node with the error on the instance.

==========  ===============================================================
continue    a ticket recorded ``resolved``; the flow leaves the node
retry       the node job's own budget and backoff did the retrying
            (``maxRetries``); once it is spent: manual repair (C-3)
compensate  manual repair, plus the node's reverse ``compensation`` action
            as a ``compensation_action`` job registered on the ticket
fallback    a valid ``fallbackNodeKey`` wins (C-2): the token moves there and
            a ``resolved`` ticket records why; else a ``fallbackAction`` is
            enqueued on a ``pending`` ticket in this same transaction and the
            flow leaves the node at once, not waiting for the action; with
            neither, manual repair
notify      manual repair; each administrator gets an in-app message and a
            ``task.repair_needed`` event (for an email / SMS automation rule)
terminate   the instance is rejected (tasks closed, tokens consumed) and a
            ``terminated`` ticket records it
==========  ===============================================================

Manual repair (C-3) is
:func:`~flowledger.compensation.repair.open_repair`: a catch task per
administrator at the failed node holding the token, a pending ticket, the
instance still running and its other branches moving. With nobody to
resolve as administrator the instance is rejected, the reason recorded.

Handling any administrator's catch task through the task API continues the
flow (the engine does that) and resolves the repair's pending ticket
(:func:`~flowledger.compensation.repair.resolve_for_repair_task`, the
engine's repair-handled hook); the
other copies are canceled.

``sagaRollback: true`` (C-7) registers the reverse actions of the nodes
that already succeeded (:mod:`flowledger.compensation.saga`) before the
action above runs, whatever the action is.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from flowledger.compensation.actions import action_document, enqueue_action
from flowledger.compensation.repair import (
    PENDING_REPAIRS_EXIST,
    close_repairs_of_ended_instance,
    open_repair,
    resolve_for_repair_task,
)
from flowledger.compensation.saga import register_saga
from flowledger.compensation.tickets import open_ticket
from flowledger.db.compensation_schema import TicketStatus
from flowledger.db.engine_schema import workflow_tasks
from flowledger.definitions.model import CompensationAction, Node
from flowledger.engine import lifecycle
from flowledger.engine.hooks import EngineHooks
from flowledger.engine.moves import leave
from flowledger.engine.node_failures import NodeFailure, effective_action
from flowledger.engine.step import Step
from flowledger.engine.task_notices import notify_assignee
from flowledger.engine.tokens import Token, move_token
from flowledger.states import InstanceStatus, TaskStatus


def _document(action: CompensationAction | None) -> dict[str, Any] | None:
    """The action as a ticket and its job store it (one form for both)."""
    return None if action is None else action_document(action)


async def _record(
    step: Step,
    node: Node,
    failure: NodeFailure,
    *,
    kind: str,
    status: TicketStatus,
    action: dict[str, Any] | None = None,
) -> int:
    ticket_id, _ = await open_ticket(
        step.conn,
        tenant_id=str(step.instance["tenant_id"]),
        instance_id=step.instance_id,
        failed_node_key=node.key,
        node_key=node.key,
        kind=kind,
        status=status,
        error=failure.message,
        action=action,
        repair_task_id=None,
        idempotency_key=None,
        actor=step.actor,
        now=step.now,
    )
    return ticket_id


async def _enqueue(
    step: Step, node: Node, failure: NodeFailure, ticket_id: int, action: dict[str, Any]
) -> int:
    return await enqueue_action(
        step.conn,
        ticket_id=ticket_id,
        tenant_id=str(step.instance["tenant_id"]),
        instance_id=step.instance_id,
        trace_id=step.trace_id,
        node_key=node.key,
        action=dict(action),
        error=failure.message,
        now=step.now,
        ledger=step.store.ledger,
        idempotency_key=f"ticket:{ticket_id}:action",
    )


async def _trace(
    step: Step, token: Token, node: Node, failure: NodeFailure, action: str, **extra: object
) -> None:
    detail = {
        "code": failure.code,
        "error": failure.message,
        "policy": action,
        "retriesExhausted": failure.retries_exhausted,
        **extra,
    }
    await step.trace(
        "node_failed", node_key=node.key, token_id=token.id, job_id=failure.job_id, detail=detail
    )
    await step.emit("node.failed", {"nodeKey": node.key, **detail})


async def _repair(
    step: Step, token: Token, node: Node, failure: NodeFailure, kind: str, admin_users: str
) -> list[Token]:
    action = _document(node.compensation) if kind == "compensate" else None
    ticket_id = await open_repair(
        step,
        token,
        node,
        error=failure.message,
        kind=kind,
        action=action,
        admin_users=admin_users,
    )
    if ticket_id is None:
        # nobody to repair it: the instance was rejected. The decision still
        # leaves a (terminated) ticket, and under compensate the external
        # side effect is still undone
        ticket_id = await _record(
            step, node, failure, kind=kind, status=TicketStatus.TERMINATED, action=action
        )
        if action is not None:
            await _enqueue(step, node, failure, ticket_id, action)
        return []
    if action is not None:
        await _enqueue(step, node, failure, ticket_id, action)
    if kind == "notify":
        await _notify_admins(step, token, node, failure)
    return []


async def _notify_admins(step: Step, token: Token, node: Node, failure: NodeFailure) -> None:
    rows = await step.conn.execute(
        select(workflow_tasks.c.id, workflow_tasks.c.assignee).where(
            workflow_tasks.c.token_id == token.id,
            workflow_tasks.c.kind == "catch",
            workflow_tasks.c.status == TaskStatus.PENDING,
        )
    )
    label = node.name or node.key
    for row in rows.all():
        await notify_assignee(
            step,
            task_id=int(row.id),
            assignee=str(row.assignee),
            node_key=node.key,
            kind="repair_needed",
            title=f"Repair needed: {label}",
            body=(
                f"Node {label} of {step.instance['definition_key']} #{step.instance_id} "
                f"failed: {failure.message}"
            ),
        )
        # email / SMS leave the process: an automation rule on this event sends them
        await step.emit(
            "task.repair_needed",
            {
                "taskId": int(row.id),
                "assignee": str(row.assignee),
                "nodeKey": node.key,
                "error": failure.message,
            },
        )


async def _fallback(
    step: Step, token: Token, node: Node, failure: NodeFailure, admin_users: str
) -> list[Token]:
    policy = node.failure_policy
    assert policy is not None
    target = policy.fallback_node_key
    if target and target != node.key and step.defn.has_node(target):
        await _record(step, node, failure, kind="fallback", status=TicketStatus.RESOLVED)
        await step.trace(
            "node_left",
            node_key=node.key,
            token_id=token.id,
            detail={"to": target, "fallback": True},
        )
        await move_token(step, token, target)
        return [token]
    action = _document(policy.fallback_action)
    if action is not None:
        ticket_id = await _record(
            step, node, failure, kind="fallback", status=TicketStatus.PENDING, action=action
        )
        await _enqueue(step, node, failure, ticket_id, action)
        return await leave(step, token, node)
    return await _repair(step, token, node, failure, "fallback", admin_users)


async def apply_failure_policy(
    step: Step, token: Token, node: Node, failure: NodeFailure, *, admin_users: str = ""
) -> list[Token] | None:
    """The node-failure hook: apply C-1 to ``node`` (a repair goes to the
    administrators of ``admin_users``, the setting); None when no policy
    applies."""
    policy = node.failure_policy
    if policy is not None and policy.saga_rollback:
        await register_saga(step, node, error=failure.message)
    action = effective_action(node)
    if action is None:
        return None
    await _trace(step, token, node, failure, action)
    if action == "continue":
        await _record(step, node, failure, kind="continue", status=TicketStatus.RESOLVED)
        return await leave(step, token, node)
    if action == "terminate":
        await _record(step, node, failure, kind="terminate", status=TicketStatus.TERMINATED)
        reason = f"{node.key} failed: {failure.message}"
        await step.set_instance(error=f"{node.key}: {failure.message}")
        await lifecycle.finish(
            step, InstanceStatus.REJECTED, reason=reason, task_status=TaskStatus.SKIPPED
        )
        return []
    if action == "fallback":
        return await _fallback(step, token, node, failure, admin_users)
    # retry (budget spent), compensate, notify: manual repair (C-3)
    return await _repair(step, token, node, failure, action, admin_users)


def compensation_hooks(admin_users: str = "") -> EngineHooks[Step]:
    """The engine hooks of the failure policies: :func:`apply_failure_policy`
    decides node failures,
    :func:`~flowledger.compensation.repair.resolve_for_repair_task` closes a
    repair's pending ticket when one of its catch tasks is handled, and
    :func:`~flowledger.compensation.repair.close_repairs_of_ended_instance`
    closes the repairs of an instance that ended. Repairs go to the
    administrators ``admin_users`` names (the ``admin_users`` setting, SPEC
    C-3). An engine built with them has compensation; one built without has
    none (an immutable value: nothing is installed anywhere)."""

    async def node_failure(
        step: Step, token: Token, node: Node, failure: NodeFailure
    ) -> list[Token] | None:
        return await apply_failure_policy(step, token, node, failure, admin_users=admin_users)

    return EngineHooks(
        node_failure=node_failure,
        repair_handled=resolve_for_repair_task,
        instance_ended=close_repairs_of_ended_instance,
        instance_ended_when=PENDING_REPAIRS_EXIST,
        name="compensation",
    )
