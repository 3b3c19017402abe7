"""Human-task actions (SPEC E-3, E-5, E-11): approve, reject, handle,
transfer and comment. Each runs in the caller's step (instance row locked
first) and checks: instance running (a suspended instance must be resumed),
task pending, the action fits the task's kind, and the task's node still
holds an active token (E-4) — otherwise the submission is refused. A
completion that passes every check is checked and written in one statement
(issue 15 item 2); one that does not reads the task to say why.

Approval ``mode: any`` completes on the first approval and cancels the
sibling tasks; ``mode: all`` waits for every assignee. A rejection rejects
the instance (E-6)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import update

from flowledger.db.engine_schema import workflow_comments, workflow_tasks
from flowledger.engine import lifecycle, node_failures, runner
from flowledger.engine.assignees import require_tenant_user
from flowledger.engine.errors import NotAssignee, TaskNotFound, TaskStateError, TaskWithoutToken
from flowledger.engine.forms import write_form
from flowledger.engine.moves import leave
from flowledger.engine.step import Step
from flowledger.engine.tasks import (
    close_open_tasks,
    finish_actionable_task,
    finish_task,
    lock_task,
    lock_task_with_token,
    open_tasks,
    record_finished,
)
from flowledger.engine.tokens import Token
from flowledger.states import InstanceStatus, TaskStatus, TokenState

ACTIONS_BY_KIND = {
    "approval": {"approve", "reject"},
    "handle": {"handle"},
    "catch": {"handle"},
    "resubmit": {"handle"},
}
_KINDS_BY_ACTION = {
    action: sorted(kind for kind, actions in ACTIONS_BY_KIND.items() if action in actions)
    for action in {"approve", "reject", "handle"}
}


def _require_assignee(step: Step, task: Any, assignee_only: bool) -> None:
    if assignee_only and task.assignee != step.actor:
        raise NotAssignee(f"task {task.id} is assigned to someone else", field="taskId")


async def _actionable(
    step: Step, task_id: int, action: str, assignee_only: bool
) -> tuple[Any, Token]:
    task, token, state = await lock_task_with_token(step, task_id)
    if task is None or task.instance_id != step.instance_id:
        raise TaskNotFound(f"task {task_id} not found", field="taskId")
    _require_assignee(step, task, assignee_only)
    lifecycle.require_status(step, InstanceStatus.RUNNING)
    if task.status != TaskStatus.PENDING:
        raise TaskStateError(
            f"task {task_id} is {task.status}, not pending", field="status", status=task.status
        )
    if action not in ACTIONS_BY_KIND.get(task.kind, set()):
        allowed = " or ".join(sorted(ACTIONS_BY_KIND.get(task.kind, set())))
        raise TaskStateError(
            f"task {task_id} is a task of kind {task.kind}: it takes {allowed}, not {action}",
            field="action",
        )
    if token is None or state != TokenState.ACTIVE or token.node_key != task.node_key:
        raise TaskWithoutToken(
            f"task {task_id} at {task.node_key!r} holds no active token; repair the instance "
            "with a force jump",
            field="taskId",
        )
    return task, token


async def complete(
    step: Step,
    task_id: int,
    action: str,
    *,
    comment: str | None = None,
    form: dict[str, Any] | None = None,
    assignee_only: bool = False,
) -> None:
    taken = None
    if step.instance["status"] == InstanceStatus.RUNNING:  # checked and written at once
        taken = await finish_actionable_task(
            step,
            task_id,
            kinds=_KINDS_BY_ACTION.get(action, []),
            action=action,
            comment=comment,
            assignee=step.actor if assignee_only else None,
        )
    if taken is None:  # why not (or, all checks passing, the task written now)
        task, token = await _actionable(step, task_id, action, assignee_only)
    else:
        task, token = taken
    if form:
        await write_form(step, form, source=f"task:{task_id}")
    node = step.defn.node(task.node_key)
    if taken is None:
        await finish_task(
            step, task_id, status=TaskStatus.COMPLETED, action=action, comment=comment
        )
    else:
        await record_finished(step, task_id, TaskStatus.COMPLETED, action)
    if task.kind == "catch":
        await node_failures.repair_handled(step, task_id)
    if action == "reject":
        await lifecycle.finish(step, InstanceStatus.REJECTED, reason=comment)
        return
    siblings = (
        [t for t in await open_tasks(step, token_id=token.id) if t.id != task_id]
        if task.open_siblings or task.kind == "catch"  # a repair hook may add tasks
        else []
    )
    if task.kind == "approval" and node.mode == "all" and siblings:
        return  # wait for the other approvers
    if siblings:
        await close_open_tasks(
            step,
            status=TaskStatus.CANCELED,
            token_id=token.id,
            comment="completed by another assignee",
        )
    await runner.run(step, await leave(step, token, node))


async def transfer(
    step: Step,
    task_id: int,
    to_user: str,
    *,
    comment: str | None = None,
    assignee_only: bool = False,
) -> None:
    task = await lock_task(step, task_id)
    if task is None or task.instance_id != step.instance_id:
        raise TaskNotFound(f"task {task_id} not found", field="taskId")
    _require_assignee(step, task, assignee_only)
    if task.status != TaskStatus.PENDING:
        raise TaskStateError(f"task {task_id} is {task.status}, not pending", field="status")
    await require_tenant_user(step.conn, to_user, task.tenant_id)  # issue 17 item 8
    await step.conn.execute(
        update(workflow_tasks).where(workflow_tasks.c.id == task_id).values(assignee=to_user)
    )
    await step.trace(
        "task_transferred",
        task_id=task_id,
        detail={"from": task.assignee, "to": to_user, "comment": comment},
    )
    await step.emit("task.transferred", {"taskId": task_id, "from": task.assignee, "to": to_user})


async def add_comment(step: Step, body: str, *, task_id: int | None = None) -> int:
    comment_id = (
        await step.conn.execute(
            workflow_comments.insert()
            .values(
                instance_id=step.instance_id,
                task_id=task_id,
                author=step.actor,
                body=body,
                created_at=step.now,
            )
            .returning(workflow_comments.c.id)
        )
    ).scalar_one()
    await step.trace("comment_added", task_id=task_id, detail={"commentId": comment_id})
    return int(comment_id)
