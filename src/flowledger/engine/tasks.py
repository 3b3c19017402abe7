"""Task rows (SPEC E-5): human tasks are ``pending`` (actionable), system
waits are ``waiting``; cc tasks are ``cc``; end states completed / skipped /
canceled. Assignees come from users, roles (the users table) or an
expression over the form. The statements are built once, with bound
parameters."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import (
    Boolean,
    Integer,
    bindparam,
    func,
    literal_column,
    select,
    update,
)

from flowledger.db.engine_schema import users, workflow_tasks, workflow_tokens
from flowledger.definitions.model import Assignees
from flowledger.engine.assignee_rules import pick_assignees
from flowledger.engine.step import Step
from flowledger.engine.store.job_lock import (
    TASK_FINISH,
    FinishedTask,
    TaskFinish,
    finished_task,
)
from flowledger.engine.tokens import Token
from flowledger.engine.write_buffer import buffer_of, flush_for_read, write_held
from flowledger.states import TaskStatus, TokenState

SYSTEM = "system"

_INSERT = workflow_tasks.insert().returning(workflow_tasks.c.id)
# the SET columns are the parameters' keys (one compiled form per key set)
_UPDATE_ONE = update(workflow_tasks).where(workflow_tasks.c.id == bindparam("b_task_id"))
_UPDATE_MANY = update(workflow_tasks).where(
    workflow_tasks.c.id.in_(bindparam("b_task_ids", expanding=True))
)
_LOCK = (
    select(workflow_tasks).where(workflow_tasks.c.id == bindparam("b_task_id")).with_for_update()
)


async def create_task(
    step: Step,
    *,
    node_key: str,
    token_id: int | None,
    kind: str,
    status: TaskStatus,
    assignee: str,
    due_at: datetime | None = None,
) -> int:
    """Create a task of this step's instance; its id. With an id the step
    reserved (PostgreSQL) the row goes to the transaction's write buffer and
    is inserted with the step's other rows; else it is inserted now."""
    row = {
        "instance_id": step.instance_id,
        "tenant_id": step.instance["tenant_id"],
        "definition_key": step.instance["definition_key"],
        "node_key": node_key,
        "token_id": token_id,
        "kind": kind,
        "status": status,
        "assignee": assignee,
        "due_at": due_at,
        "created_at": step.now,
        "finished_at": step.now if status is TaskStatus.CC else None,
    }
    task_id = step.take_task_id()
    if task_id is None:
        task_id = int((await step.conn.execute(_INSERT, row)).scalar_one())
    else:  # reserved: held, to ride on a later statement, or inserted now
        row["id"] = task_id
        buffer = buffer_of(step.conn)
        if buffer is None:
            await step.conn.execute(_INSERT, row)
        else:
            buffer.add_task(row)
    await step.trace(
        "task_created",
        node_key=node_key,
        token_id=token_id,
        task_id=task_id,
        detail={"kind": kind, "assignee": assignee, "status": status.value},
    )
    if status is not TaskStatus.WAITING:
        await step.emit(
            "task.created",
            {"taskId": task_id, "nodeKey": node_key, "assignee": assignee, "kind": kind},
        )
    return task_id


async def finish_task(
    step: Step,
    task_id: int,
    *,
    status: TaskStatus,
    action: str | None,
    comment: str | None = None,
    by: str | None = None,
) -> None:
    await write_held(step.conn)  # the task may be held
    await step.conn.execute(
        _UPDATE_ONE,
        {"b_task_id": task_id, **_finished(step, status, action, comment, by)},
    )
    await record_finished(step, task_id, status, action)


def _finished(
    step: Step, status: TaskStatus, action: str | None, comment: str | None, by: str | None
) -> dict[str, Any]:
    return {
        "status": status,
        "action": action,
        "comment": comment,
        "finished_at": step.now,
        "finished_by": by or step.actor,
    }


async def record_finished(step: Step, task_id: int, status: TaskStatus, action: str | None) -> None:
    """The trace row and the event of a task just finished."""
    await step.trace(
        "task_completed", task_id=task_id, detail={"status": status.value, "action": action}
    )
    await step.emit("task.completed", {"taskId": task_id, "status": status.value, "action": action})


_HELD = workflow_tokens.alias("held")


def _held(column: str, type_: Any) -> Any:
    # spelled out: SQLAlchemy renders RETURNING columns unqualified on SQLite,
    # which would leave the subquery's correlation to name resolution
    return literal_column(
        f"(SELECT held.{column} FROM workflow_tokens AS held "
        "WHERE held.id = workflow_tasks.token_id)",
        type_,
    )


# A token's tasks are its instance's: the instance condition lets both
# sibling counts read only that instance's open tasks (the partial index
# ix_workflow_tasks_open_instance) instead of every open task there is.
_OPEN_SIBLINGS_LEFT = literal_column(
    "(SELECT count(*) FROM workflow_tasks AS sibling "
    "WHERE sibling.instance_id = workflow_tasks.instance_id "
    "AND sibling.token_id = workflow_tasks.token_id AND sibling.id != workflow_tasks.id "
    f"AND sibling.status IN ('{TaskStatus.PENDING.value}', '{TaskStatus.WAITING.value}'))",
    Integer(),
)


# The task's token is active at the task's node. A scalar subquery by the
# token's primary key, not an EXISTS: PostgreSQL turns an EXISTS into a join
# and, in the generic plan psycopg's prepared statement keeps (made while the
# tables are small and never analyzed), may search it by the token's node
# and state, reading every token waiting at that node for each approval.
_HELD_ACTIVE_AT_NODE = literal_column(
    f"(SELECT held.state = '{TokenState.ACTIVE.value}' AND held.node_key = workflow_tasks.node_key "
    "FROM workflow_tokens AS held WHERE held.id = workflow_tasks.token_id)",
    Boolean(),
)


def _finish_actionable(by_assignee: bool) -> Any:
    conditions = [
        workflow_tasks.c.id == bindparam("b_task_id"),
        workflow_tasks.c.instance_id == bindparam("b_instance_id"),
        workflow_tasks.c.status == TaskStatus.PENDING,
        workflow_tasks.c.kind.in_(bindparam("b_kinds", expanding=True)),
        _HELD_ACTIVE_AT_NODE.is_(True),
    ]
    if by_assignee:
        conditions.append(workflow_tasks.c.assignee == bindparam("b_assignee"))
    return (
        update(workflow_tasks)
        .where(*conditions)
        .returning(
            workflow_tasks.c.kind,
            workflow_tasks.c.node_key,
            workflow_tasks.c.token_id,
            _OPEN_SIBLINGS_LEFT.label("open_siblings"),
            _held("fork_stack", workflow_tokens.c.fork_stack.type).label("token_fork_stack"),
        )
    )


_FINISH_ACTIONABLE = {by: _finish_actionable(by) for by in (False, True)}


async def finish_actionable_task(
    step: Step,
    task_id: int,
    *,
    kinds: list[str],
    action: str,
    comment: str | None,
    assignee: str | None,
) -> tuple[Any, Token] | None:
    """Complete task ``task_id`` with ``action`` if it is a pending task of
    this instance, of one of ``kinds`` (and ``assignee``'s, when given),
    whose token is active at its node — checked and written in one
    statement, which locks the task row. Returns the task's ``kind``,
    ``node_key`` and ``open_siblings`` and its token, or None when it is not
    such a task (nothing written; the caller finds out why). The caller
    records the completion (:func:`record_finished`)."""
    await flush_for_read(step.conn)
    params: dict[str, Any] = {
        "b_task_id": task_id,
        "b_instance_id": step.instance_id,
        "b_kinds": kinds,
        **_finished(step, TaskStatus.COMPLETED, action, comment, None),
    }
    if assignee is not None:
        params["b_assignee"] = assignee
    row = (await step.conn.execute(_FINISH_ACTIONABLE[assignee is not None], params)).first()
    if row is None:
        return None
    return row, Token(int(row.token_id), str(row.node_key), list(row.token_fork_stack or []))


async def finish_held_task(
    step: Step,
    task_id: int,
    *,
    expected: TaskStatus,
    status: TaskStatus,
    action: str | None,
    by: str | None = None,
) -> tuple[Token, str] | None:
    """:func:`finish_task` for a task that is still ``expected`` and holds an
    active token, in a step whose instance is running, checked and written
    in one statement (which locks the task row, as
    :func:`lock_task_with_token` would): the token and the task's node, or
    None when the task is not such a task (nothing written; the caller asks
    :func:`lock_task_with_token` why). The finish of a job step's first
    statement (:class:`~flowledger.engine.store.job_lock.TaskFinish`), here
    in a step that holds its instance already."""
    await flush_for_read(step.conn)
    finish = TaskFinish(task_id, expected, status, action, by or step.actor, step.now)
    params = {"lock_instance_id": step.instance_id, **finish.params()}
    row = (await step.conn.execute(TASK_FINISH, params)).first()
    return await took_held_task(step, finished_task(row), task_id, status, action)


async def took_held_task(
    step: Step,
    finished: FinishedTask | None,
    task_id: int,
    status: TaskStatus,
    action: str | None,
) -> tuple[Token, str] | None:
    """What :func:`finish_held_task` returns, for a finish already written
    (by the job step's first statement, :class:`~flowledger.engine.step.JobStepLock`):
    the finish recorded, the token and the task's node; None when it wrote
    nothing (the caller asks :func:`lock_task_with_token` why)."""
    if finished is None:
        return None
    await record_finished(step, task_id, status, action)
    token = Token(finished.token_id, finished.token_node_key, finished.token_fork_stack)
    return token, finished.node_key


_TOKEN = workflow_tokens.alias("held_token")
_SIBLING = workflow_tasks.alias("sibling")
_OPEN_SIBLINGS = (
    select(func.count())
    .where(
        _SIBLING.c.instance_id == workflow_tasks.c.instance_id,
        _SIBLING.c.token_id == workflow_tasks.c.token_id,
        _SIBLING.c.id != workflow_tasks.c.id,
        _SIBLING.c.status.in_([TaskStatus.PENDING, TaskStatus.WAITING]),
    )
    .scalar_subquery()
)
_LOCK_WITH_TOKEN = (
    select(
        workflow_tasks,
        _TOKEN.c.node_key.label("token_node_key"),
        _TOKEN.c.state.label("token_state"),
        _TOKEN.c.fork_stack.label("token_fork_stack"),
        _OPEN_SIBLINGS.label("open_siblings"),
    )
    .select_from(workflow_tasks.outerjoin(_TOKEN, _TOKEN.c.id == workflow_tasks.c.token_id))
    .where(workflow_tasks.c.id == bindparam("task_id"))
    .with_for_update(of=workflow_tasks)
)


async def lock_task_with_token(step: Step, task_id: int) -> tuple[Any, Token | None, str | None]:
    """Lock the task row and read the token it holds, in one statement: the
    task (None if missing; ``open_siblings`` counts the other pending or
    waiting tasks of its token), its token and the token's state (None, None
    when it holds none)."""
    await flush_for_read(step.conn)
    row = (await step.conn.execute(_LOCK_WITH_TOKEN, {"task_id": task_id})).first()
    if row is None or row.token_id is None or row.token_state is None:
        return row, None, None
    token = Token(int(row.token_id), row.token_node_key, list(row.token_fork_stack or []))
    return row, token, str(row.token_state)


async def lock_task(step: Step, task_id: int) -> Any:
    await write_held(step.conn)
    return (await step.conn.execute(_LOCK, {"b_task_id": task_id})).first()


def _open_tasks_query(by_node: bool, by_token: bool) -> Any:
    query = select(workflow_tasks).where(
        workflow_tasks.c.instance_id == bindparam("b_instance_id"),
        workflow_tasks.c.status.in_(bindparam("b_statuses", expanding=True)),
    )
    if by_node:
        query = query.where(workflow_tasks.c.node_key == bindparam("b_node_key"))
    if by_token:
        query = query.where(workflow_tasks.c.token_id == bindparam("b_token_id"))
    return query.order_by(workflow_tasks.c.id)


_OPEN_TASKS = {
    (by_node, by_token): _open_tasks_query(by_node, by_token)
    for by_node in (False, True)
    for by_token in (False, True)
}


async def open_tasks(
    step: Step,
    *,
    node_key: str | None = None,
    token_id: int | None = None,
    statuses: tuple[TaskStatus, ...] = (TaskStatus.PENDING, TaskStatus.WAITING),
) -> list[Any]:
    query = _OPEN_TASKS[node_key is not None, token_id is not None]
    params: dict[str, Any] = {"b_instance_id": step.instance_id, "b_statuses": list(statuses)}
    if node_key is not None:
        params["b_node_key"] = node_key
    if token_id is not None:
        params["b_token_id"] = token_id
    await write_held(step.conn)
    return list((await step.conn.execute(query, params)).all())


async def close_open_tasks(
    step: Step,
    *,
    status: TaskStatus,
    comment: str | None = None,
    exclude: int | None = None,
    token_id: int | None = None,
) -> list[int]:
    """End every pending/waiting task of the instance (or of one token)."""
    rows = await open_tasks(step, token_id=token_id)
    return await close_tasks(
        step, [int(row.id) for row in rows if row.id != exclude], status=status, comment=comment
    )


async def close_tasks(
    step: Step, ids: list[int], *, status: TaskStatus, comment: str | None = None
) -> list[int]:
    """End the open tasks ``ids`` (found by the caller) with ``status``."""
    if ids:
        await step.conn.execute(
            _UPDATE_MANY,
            {
                "b_task_ids": ids,
                "status": status,
                "finished_at": step.now,
                "finished_by": step.actor,
                "comment": comment,
            },
        )
        for task_id in ids:
            await step.trace(
                "task_completed", task_id=task_id, detail={"status": status.value, "action": None}
            )
    return ids


async def resolve_assignees(step: Step, assignees: Assignees | None) -> list[str]:
    """The users a human node is assigned to, in a stable order, deduplicated
    (:func:`~flowledger.engine.assignee_rules.pick_assignees`)."""
    if assignees is None:
        return []
    rows: list[Any] = []
    if assignees.roles:
        rows = list(
            (
                await step.conn.execute(
                    select(users.c.id, users.c.roles, users.c.tenants).order_by(users.c.id)
                )
            ).all()
        )
    return pick_assignees(
        assignees,
        rows,
        tenant=step.instance["tenant_id"],
        form=step.form,
        initiator=step.instance["initiator"],
    )
