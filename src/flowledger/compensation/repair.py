"""The admin repair task of a failed node (SPEC C-3), opened from inside the
failing engine step by the notify, compensate and exhausted-retry policies.

:func:`open_repair` leaves the failed node's token **active at that node**
and gives it ``catch`` tasks (one per administrator, all pending) plus a
pending ticket that names the first of them. The instance stays
``running``: this is not the administrator's ``suspended`` state, and the
other branches keep moving — nothing else is touched. The token is what a
ticket resume (or handling the catch task) continues from: it leaves the
failed node along its first outgoing edge.

Administrators come from :mod:`flowledger.compensation.admins`. When nobody
can be resolved the instance is rejected in the same step, the reason in
the engine trace (``compensation_no_admin`` and ``instance_finished``) and
on the instance's ``error``; no ticket is opened.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import bindparam, exists, select

from flowledger.compensation.admins import resolve_admins
from flowledger.compensation.tickets import close_ticket, open_ticket, tickets
from flowledger.db.compensation_schema import LogKind, TicketStatus
from flowledger.db.engine_schema import workflow_instances, workflow_tasks
from flowledger.definitions.model import Node
from flowledger.engine import lifecycle
from flowledger.engine.step import Step
from flowledger.engine.tasks import create_task
from flowledger.engine.tokens import Token, move_token
from flowledger.states import InstanceStatus, TaskStatus

REPAIR_TASK_KIND = "catch"


async def open_repair(
    step: Step,
    token: Token,
    node: Node,
    *,
    error: str,
    kind: str,
    action: dict[str, Any] | None = None,
    admin_users: str = "",
) -> int | None:
    """Open the repair task and its pending ticket at ``node`` (where
    ``token`` stays active) for the administrators ``admin_users`` names for
    the tenant (the ``admin_users`` setting; without an entry, the tenant's
    ``workflow_admin`` users); return the ticket id, or None when no
    administrator could be resolved and the instance was rejected."""
    tenant = str(step.instance["tenant_id"])
    admins = await resolve_admins(step.conn, tenant, admin_users)
    if not admins:
        reason = f"no administrator could be resolved to repair node {node.key!r}: {error}"
        await step.trace(
            "compensation_no_admin",
            node_key=node.key,
            token_id=token.id,
            detail={"kind": kind, "error": error, "tenant": tenant},
        )
        await step.set_instance(error=f"{node.key}: {reason}")
        await lifecycle.finish(step, InstanceStatus.REJECTED, reason=reason)
        return None
    if token.node_key != node.key:
        await move_token(step, token, node.key)
    task_ids = [
        await create_task(
            step,
            node_key=node.key,
            token_id=token.id,
            kind=REPAIR_TASK_KIND,
            status=TaskStatus.PENDING,
            assignee=admin,
        )
        for admin in admins
    ]
    ticket_id, _ = await open_ticket(
        step.conn,
        tenant_id=tenant,
        instance_id=step.instance_id,
        failed_node_key=node.key,
        node_key=node.key,
        kind=kind,
        error=error,
        action=action,
        repair_task_id=task_ids[0],
        idempotency_key=None,
        actor=step.actor,
        now=step.now,
    )
    await step.trace(
        "compensation_ticket_opened",
        node_key=node.key,
        token_id=token.id,
        task_id=task_ids[0],
        detail={"ticketId": ticket_id, "kind": kind, "assignees": admins},
    )
    await step.emit(
        "compensation.opened",
        {"ticketId": ticket_id, "nodeKey": node.key, "kind": kind, "error": error},
    )
    return ticket_id


async def resolve_for_repair_task(step: Step, task_id: int) -> int | None:
    """Close the pending ticket of the repair that ``task_id`` (a ``catch``
    task just handled through the task API; the flow already continued)
    belongs to, in the same step. A repair has one catch task per
    administrator and the ticket names the first: any administrator's copy —
    a catch task on the same token at the same node — closes it (C-3).
    Returns the ticket id, if any."""
    tasks = workflow_tasks.c
    handled = (
        await step.conn.execute(
            select(tasks.token_id, tasks.node_key).where(
                tasks.id == task_id, tasks.kind == REPAIR_TASK_KIND
            )
        )
    ).first()
    if handled is None or handled.token_id is None:
        return None
    copies = select(tasks.id).where(
        tasks.token_id == handled.token_id,
        tasks.node_key == handled.node_key,
        tasks.kind == REPAIR_TASK_KIND,
    )
    row = (
        await step.conn.execute(
            select(tickets.c.id, tickets.c.repair_task_id)
            .where(
                tickets.c.repair_task_id.in_(copies.scalar_subquery()),
                tickets.c.instance_id == step.instance_id,
                tickets.c.status == TicketStatus.PENDING,
            )
            .order_by(tickets.c.id.desc())
            .limit(1)
            .with_for_update()
        )
    ).first()
    if row is None:
        return None
    await close_ticket(
        step.conn,
        int(row.id),
        TicketStatus.RESOLVED,
        # the flow continued past the failed node: a resume, done through the task
        log_kind=LogKind.RESUME,
        actor=step.actor,
        now=step.now,
        message=f"repair task {task_id} handled",
        detail={"via": "task", "taskId": task_id, "repairTaskId": int(row.repair_task_id)},
    )
    return int(row.id)


# built once (issue 15 item 4): every step that ends an instance runs it
_PENDING_REPAIRS = (
    select(tickets.c.id)
    .where(
        tickets.c.instance_id == bindparam("b_instance_id"),
        tickets.c.status == TicketStatus.PENDING,
        tickets.c.repair_task_id.is_not(None),
    )
    .order_by(tickets.c.id)
    .with_for_update()
)


# the hook's condition (EngineHooks.instance_ended_when): read with the ending
# instance's update, so an instance without such a ticket costs no query here
PENDING_REPAIRS_EXIST = (
    exists()
    .where(
        tickets.c.instance_id == workflow_instances.c.id,
        tickets.c.status == TicketStatus.PENDING,
        tickets.c.repair_task_id.is_not(None),
    )
    .correlate(workflow_instances)
)


async def close_repairs_of_ended_instance(step: Step, status: InstanceStatus) -> list[int]:
    """The instance ended (canceled, withdrawn, rejected…) while repair
    tickets were pending: their repair tasks were closed with it, so nothing
    can be repaired any more — they are terminated, the reason in their
    history. Tickets without a repair task (Saga, fallback actions) stay
    pending: their reverse actions still need an operator's eye."""
    rows = (await step.conn.execute(_PENDING_REPAIRS, {"b_instance_id": step.instance_id})).all()
    for row in rows:
        await close_ticket(
            step.conn,
            int(row.id),
            TicketStatus.TERMINATED,
            log_kind=LogKind.TERMINATE,
            actor=step.actor,
            now=step.now,
            message=f"the instance ended {status.value}; its repair task was closed with it",
            detail={"instanceStatus": status.value},
        )
    return [int(row.id) for row in rows]
