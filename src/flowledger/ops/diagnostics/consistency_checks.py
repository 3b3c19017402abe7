"""The O-12 checks of one instance that the health inspection (O-16) does
not name (SPEC O-12): active tokens no open task holds, a running instance
without an open task or without an active token, and waiting tasks nothing
can wake. Each is one set-based ``SELECT`` of the rows
:mod:`flowledger.ops.health.query` defines, run by
:mod:`flowledger.ops.diagnostics.consistency` for the diagnostics drawer's
conclusions."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, and_, exists, literal, null, or_, select

from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.health.query import (
    LIVE_JOB,
    OPEN_TASK,
    RuleParams,
    columns,
    no_open_task,
    open_tasks,
    running,
    scope,
    task_jobs,
    task_row,
)
from flowledger.states import InstanceStatus, JobStatus, TaskStatus, TokenState


def tokens_without_task(p: RuleParams) -> Select[Any]:
    """Active tokens that no open task holds (parked join tokens are not
    active, so never counted): ``task_id`` is the token id here."""
    return (
        select(
            *columns(
                instances.c.id,
                tokens.c.id,
                tokens.c.node_key,
                null(),
                tokens.c.created_at,
                literal(""),
            )
        )
        .select_from(tokens.join(instances, instances.c.id == tokens.c.instance_id))
        .where(
            tokens.c.state == TokenState.ACTIVE.value,
            ~exists().where(
                tasks.c.instance_id == tokens.c.instance_id,
                tasks.c.token_id == tokens.c.id,
                tasks.c.status.in_(OPEN_TASK),
            ),
            *scope(p),
        )
    )


def running_without_active_task(p: RuleParams) -> Select[Any]:
    return select(
        *columns(instances.c.id, null(), null(), null(), instances.c.updated_at, literal(""))
    ).where(no_open_task(), *scope(p))


def running_without_active_token(p: RuleParams) -> Select[Any]:
    return select(
        *columns(instances.c.id, null(), null(), null(), instances.c.updated_at, literal(""))
    ).where(
        ~exists().where(
            tokens.c.instance_id == instances.c.id, tokens.c.state == TokenState.ACTIVE.value
        ),
        *scope(p),
    )


def unwakeable_waiting_tasks(p: RuleParams) -> Select[Any]:
    """Waiting tasks of instances with no pending task, that nothing can
    wake: no live job of the task (pending/running/paused), no running or
    suspended child instance started by it, no trigger call accepted and
    awaiting its callback (a succeeded trigger_dispatch job of the task), and
    no pending task at the same node. Reported only when every waiting task
    of the instance is such (a suspected deadlock)."""
    child = instances.alias("child")
    pending = tasks.alias("pending_task")
    awaiting_callback = exists().where(
        task_jobs("trigger_dispatch", jobs.c.status == JobStatus.SUCCEEDED.value)
    )
    wakeable = or_(
        exists().where(
            jobs.c.instance_id == tasks.c.instance_id,
            jobs.c.task_id == tasks.c.id,
            jobs.c.status.in_(LIVE_JOB),
        ),
        exists().where(
            child.c.parent_instance_id == tasks.c.instance_id,
            child.c.parent_task_id == tasks.c.id,
            child.c.status.in_([InstanceStatus.RUNNING.value, InstanceStatus.SUSPENDED.value]),
        ),
        and_(tasks.c.kind == "trigger", awaiting_callback),
        exists().where(
            pending.c.instance_id == tasks.c.instance_id,
            pending.c.node_key == tasks.c.node_key,
            pending.c.status == TaskStatus.PENDING.value,
        ),
    )
    any_pending = exists().where(
        pending.c.instance_id == tasks.c.instance_id, pending.c.status == TaskStatus.PENDING.value
    )
    query = open_tasks(
        p, tasks.c.status == TaskStatus.WAITING.value, ~wakeable, ~any_pending
    ).add_columns(*task_row(p, null(), tasks.c.created_at, tasks.c.kind))
    return running(p, query)
