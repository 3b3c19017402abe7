"""Reassign (SPEC O-5): an operator moves a pending task to another user;
409 ``assignee_conflict`` when that user already holds a pending task at the
same node of the same instance (that includes the task itself: reassigning
to the current assignee changes nothing and is refused the same way).

An operator action beside the others in ``ops/``, built from the engine's
own pieces: one engine step (instance row locked first, SPEC L-13), the
conflict check and the assignee change inside it, so two concurrent
reassigns of one instance cannot both pass the check; its intervention
(issue 31, :mod:`flowledger.engine.interventions`) in the same step.
:func:`reassign_as` is the operator's action (the API route
``POST /tasks/{taskId}/reassign``): the task looked up within the caller's
tenants and the step in one transaction with its audit row ``task.reassign``
(:func:`flowledger.access.audit.audited_change`)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.access.audit import AuditContext, AuditEntry, audited_change
from flowledger.access.callers import Caller
from flowledger.engine import Engine, actions, interventions, queries
from flowledger.engine.errors import TaskNotFound
from flowledger.errors import ConflictError


class AssigneeConflict(ConflictError):
    code = "assignee_conflict"


async def reassign_as(
    ctx: AuditContext, caller: Caller, engine: Engine, task_id: int, to_user: str, *, reason: str
) -> None:
    """Give pending task ``task_id`` (one ``caller`` sees: 404
    ``task_not_found`` otherwise) to ``to_user``: one engine step, in one
    transaction with its audit row."""
    entry = AuditEntry.by(caller, "task.reassign", "task", task_id, reason=reason)
    async with audited_change(ctx, entry) as conn:
        task = await queries.get_task(conn, task_id, tenants=caller.tenant_scope)
        if task is None:
            raise TaskNotFound(f"task {task_id} not found", field="taskId")
        entry.tenant_id = task["tenant_id"]
        entry.detail.update(instanceId=task["instance_id"], to=to_user, previous=task["assignee"])
        await _reassign(
            conn, engine, task_id, task["instance_id"], to_user, actor=caller.user_id, reason=reason
        )


async def _reassign(
    conn: AsyncConnection,
    engine: Engine,
    task_id: int,
    instance_id: int,
    to_user: str,
    *,
    actor: str,
    reason: str,
) -> None:
    async with engine.step(conn, instance_id, actor) as step:
        task = await queries.get_task(conn, task_id)
        if task is None or task["instance_id"] != instance_id:
            raise TaskNotFound(f"task {task_id} not found", field="taskId")
        held = await queries.pending_task_at_node(
            conn, instance_id=instance_id, node_key=task["node_key"], assignee=to_user
        )
        if held is not None:
            raise AssigneeConflict(
                f"{to_user} already holds pending task {held} at node {task['node_key']!r}",
                field="to",
                taskId=held,
            )
        await actions.transfer(step, task_id, to_user, comment=f"[reassigned] {reason}")
        await interventions.record_in_step(
            step,
            interventions.REASSIGN,
            reason=reason,
            node_key=task["node_key"],
            task_id=task_id,
            changes=[interventions.change("assignee", task["assignee"], to_user)],
        )
