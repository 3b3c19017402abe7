"""The steps of a deadline's escalation chain (issue 31 item 4, SPEC E-5),
run by ``task_timeout`` jobs (:mod:`flowledger.engine.deadlines` enqueues
the first, at the task's due time).

A step is done at most once per task: ``workflow_tasks.escalation_step``
holds the last step done, read and written under the task's row lock in the
job's step, so a duplicated or retried job finds its step done and skips
(no second transfer, no second notice). Step 0 is the due time passing (a
``task_overdue`` trace row); the chain's steps: ``remind`` (an in-app
message to the assignee and ``task.overdue``), ``transfer`` (to the
assignee's manager, a named user or the first other user of a role, via the
engine's transfer: a ``task_transferred`` trace row and event) and
``notify_admin`` (an in-app message to the tenant's workflow
administrators). A transfer or an administrator notice sets
``escalated_at`` (once) and emits ``task.escalated``; every step writes a
``deadline_escalation`` trace row."""

from __future__ import annotations

from datetime import UTC, timedelta
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import users, workflow_tasks
from flowledger.definitions.deadline_rules import parse_target
from flowledger.definitions.model import Node
from flowledger.engine import actions, task_notices
from flowledger.engine.deadlines import enqueue_step, sees
from flowledger.engine.step import Step
from flowledger.notify.messages import post_message

ADMIN_ROLE = "workflow_admin"
FALLBACK_ADMIN = "admin"


async def escalate(step: Step, task: Any, node: Node, index: int | None) -> str | None:
    """Run step ``index`` of the chain (0: the due time) for the locked,
    pending ``task``; a recreated job without a step runs the next one.
    A step already done is skipped: the reason is returned."""
    assert node.deadline is not None
    chain = node.deadline.escalation
    done = task.escalation_step
    index = (0 if done is None else done + 1) if index is None else index
    if done is not None and done >= index:
        return f"deadline step {index} of task {task.id} is already done"
    if index > len(chain):
        return f"the deadline of task {task.id} has no step {index}"
    if task.due_at is None:
        return f"task {task.id} has no due time"
    due = task.due_at if task.due_at.tzinfo else task.due_at.replace(tzinfo=UTC)
    at = due + (chain[index - 1].after if index else timedelta(0))
    if step.now < at:  # early (a recreated job): run at its time
        await enqueue_step(step, node, task.id, index, at)
        return f"deadline step {index} of task {task.id} is due at {at.isoformat()}"
    values: dict[str, Any] = {"escalation_step": index}
    if index == 0:
        await step.trace(
            "task_overdue",
            node_key=node.key,
            task_id=task.id,
            detail={"dueAt": due.isoformat(), "assignee": task.assignee},
        )
    else:
        esc = chain[index - 1]
        escalated = await _run_step(step, task, node, index, esc.action, esc.to)
        if escalated and task.escalated_at is None:
            values["escalated_at"] = step.now
    await step.conn.execute(
        update(workflow_tasks).where(workflow_tasks.c.id == task.id).values(**values)
    )
    if index < len(chain):
        await enqueue_step(step, node, task.id, index + 1, due + chain[index].after)
    return None


async def _run_step(
    step: Step, task: Any, node: Node, index: int, action: str, to: str | None
) -> bool:
    """Do one escalation step; whether it escalated the task (a transfer
    that happened, an administrator notice)."""
    detail: dict[str, Any] = {"step": index, "action": action, "assignee": task.assignee}
    if action == "remind":
        await step.trace("deadline_escalation", node_key=node.key, task_id=task.id, detail=detail)
        await task_notices.task_overdue(
            step, task_id=task.id, assignee=task.assignee, node_key=node.key
        )
        return False
    if action == "transfer":
        assert to is not None
        target = await _transfer_target(step, task.assignee, to)
        if target is None or target == task.assignee:
            why = "no such user in the tenant" if target is None else "already the assignee"
            detail.update(to=to, skipped=why)
            await step.trace(
                "deadline_escalation", node_key=node.key, task_id=task.id, detail=detail
            )
            return False
        detail.update(to=to, toUser=target)
        await step.trace("deadline_escalation", node_key=node.key, task_id=task.id, detail=detail)
        await actions.transfer(
            step, task.id, target, comment=f"[deadline] escalated to {to} ({target})"
        )
        await _escalated(step, task, node, index, action, target)
        return True
    admins = await _admins(step.conn, step.instance["tenant_id"])
    detail["admins"] = admins
    await step.trace("deadline_escalation", node_key=node.key, task_id=task.id, detail=detail)
    instance = f"{step.instance['definition_key']} #{step.instance_id}"
    label = node.name or node.key
    for admin in admins:
        await post_message(
            step.conn,
            tenant=step.instance["tenant_id"],
            recipient=admin,
            title=f"Escalated: {label}",
            body=f"The task of {task.assignee} at {label} in {instance} is overdue.",
            kind="task_escalated",
            link=f"/tasks/{task.id}",
            now=step.now,
        )
    await _escalated(step, task, node, index, action, None)
    return True


async def _escalated(
    step: Step, task: Any, node: Node, index: int, action: str, to: str | None
) -> None:
    await step.emit(
        "task.escalated",
        {"taskId": task.id, "nodeKey": node.key, "step": index, "action": action, "to": to},
    )


async def _transfer_target(step: Step, assignee: str, to: str) -> str | None:
    """The user ``to`` names for a task of ``assignee`` (None: nobody)."""
    parsed = parse_target(to)
    assert parsed is not None  # checked at deploy
    kind, name = parsed
    tenant = step.instance["tenant_id"]
    if kind == "manager":
        name = (
            await step.conn.execute(select(users.c.manager_id).where(users.c.id == assignee))
        ).scalar_one_or_none() or ""
        kind = "user"
    if kind == "user":
        row = (await step.conn.execute(select(users.c.tenants).where(users.c.id == name))).first()
        return name if row is not None and sees(row.tenants, tenant) else None
    rows = (
        await step.conn.execute(
            select(users.c.id, users.c.roles, users.c.tenants).order_by(users.c.id)
        )
    ).all()
    holders = [str(r.id) for r in rows if name in (r.roles or []) and sees(r.tenants, tenant)]
    others = [h for h in holders if h != assignee]
    return (others or holders)[0] if holders else None


async def _admins(conn: AsyncConnection, tenant: str) -> list[str]:
    """The tenant's workflow administrators (role ``workflow_admin``), else ``admin``."""
    rows = (
        await conn.execute(select(users.c.id, users.c.roles, users.c.tenants).order_by(users.c.id))
    ).all()
    found = [r.id for r in rows if ADMIN_ROLE in (r.roles or []) and sees(r.tenants, tenant)]
    return found or [FALLBACK_ADMIN]
