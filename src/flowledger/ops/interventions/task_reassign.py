"""Reassign (SPEC O-5): an operator moves a pending task to another user;
409 ``assignee_conflict`` when that user already holds a pending task at the
same node of the same instance (that includes the task itself: reassigning
to the current assignee changes nothing and is refused the same way).

An operator action beside the others in ``ops/``, built from the engine's
own pieces: one engine step (instance row locked first, SPEC L-13), the
conflict check and the assignee change inside it, so two concurrent
reassigns of one instance cannot both pass the check; its intervention
(issue 31, :mod:`flowledger.engine.interventions`) in the same step. The API route
(``POST /tasks/{taskId}/reassign``) audits and calls it."""

from __future__ import annotations

from flowledger.engine import Engine, actions, interventions, queries
from flowledger.engine.errors import TaskNotFound
from flowledger.errors import ConflictError


class AssigneeConflict(ConflictError):
    code = "assignee_conflict"


async def reassign_task(
    engine: Engine, task_id: int, instance_id: int, to_user: str, *, actor: str, reason: str
) -> None:
    """Give pending task ``task_id`` of ``instance_id`` to ``to_user`` in one step."""
    async with engine.db.begin() as conn, engine.step(conn, instance_id, actor) as step:
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
