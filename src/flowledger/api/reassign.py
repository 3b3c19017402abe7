"""Reassign (SPEC O-5): an operator moves a pending task to another user;
409 ``assignee_conflict`` when that user already holds a pending task at the
same node of the same instance (that includes the task itself: reassigning
to the current assignee changes nothing and is refused the same way).

The engine's facade has no reassign yet, so this operator action lives here,
built from the engine's own pieces: one engine step (instance row locked
first, SPEC L-13), the conflict check and the assignee change inside it, so
two concurrent reassigns of one instance cannot both pass the check. It
belongs with the operator actions (``ops/``) or ``Engine.reassign`` once
those exist; the route does not change when it moves."""

from __future__ import annotations

from flowledger.api.deps import ApiContext
from flowledger.engine import actions, queries
from flowledger.engine.errors import TaskNotFound
from flowledger.errors import ConflictError


class AssigneeConflict(ConflictError):
    code = "assignee_conflict"


async def reassign_task(
    ctx: ApiContext, task_id: int, instance_id: int, to_user: str, *, actor: str, reason: str
) -> None:
    async with ctx.db.begin() as conn, ctx.engine.step(conn, instance_id, actor) as step:
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
