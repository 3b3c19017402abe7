"""The query builders of the health checks (SPEC O-16, O-12), one per rule,
each implemented once: parametrised by the caller's tenants, the threshold,
an optional instance id and definition key, and the time ``now`` (the
database time of the caller). For a rule that reports open tasks, also its
conditions (``…_when``), which the builder applies and
:func:`~flowledger.ops.health.rules.open_task_priorities` evaluates for all
such rules in one pass. Which rule is which — code, level, priority, group —
is the registry, :mod:`flowledger.ops.health.rules`; the parts every builder
is made of (parameters, scopes, the running-instance check, the row shape)
are :mod:`flowledger.ops.health.query`.

Every builder returns one set-based ``SELECT`` with the columns
``instance_id, task_id, node_key, job_id, since, detail`` (``detail``: a short
text the message uses — an assignee, a job status or error code, a count).
Nothing here loops over instances. The exact condition of each rule is
written in ``docs/operations.md`` and in the builders' docstrings.

Indexes (PostgreSQL): open tasks by ``ix_workflow_tasks_open_created`` /
``ix_workflow_tasks_open_kind`` (partial, status pending/waiting); a task's
jobs by ``ix_workflow_jobs_task`` (instance, task, type); failed/dead jobs
by type by ``ix_workflow_jobs_status_type``; tokens by
``ix_workflow_tokens_instance_state``; attempts by
``ix_workflow_job_executions_job``; outbox rows by
``ix_workflow_event_outbox_status`` (status, created_at) or
``…_outbox_instance``; running instances by ``ix_workflow_instances_running``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from sqlalchemy import Select, exists, func, literal, null, or_, select
from sqlalchemy.sql.elements import ColumnElement

from flowledger.db.engine_schema import workflow_event_outbox as outbox
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.db.health_sql import materialized_cte
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.health.query import (
    BROKEN_JOB,
    DUE_JOB,
    HUMAN_KINDS,
    LIVE_JOB,
    OPEN_TASK,
    RuleParams,
    columns,
    job_scope,
    latest_job,
    no_holder_probe,
    no_live_job,
    no_open_task,
    open_tasks,
    row_scope,
    running,
    scope,
    task_jobs,
    task_row,
    task_scope,
)
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED, JobStatus, TaskStatus, TokenState

#: The conditions under which a rule driven by open tasks reports one: on the
#: columns of ``tasks`` (an open task in the caller's scope whose instance is
#: running and in scope) and ``no_holder``, the condition "no active token
#: at the task's node holds it" (written by the caller: a probe or a join).
TaskWhen = Callable[[RuleParams, ColumnElement[bool]], list[ColumnElement[bool]]]

#: For a rule that reports open tasks: its row's ``job_id`` and ``detail``,
#: on the columns of ``tasks`` (its ``since`` is the task's ``created_at``,
#: its ``node_key`` the task's), so that a reader that found the task by
#: :func:`~flowledger.ops.health.rules.open_task_priorities` can fill them.
TaskRow = Callable[[RuleParams], tuple[Any, Any]]


def _task_rule(p: RuleParams, when: TaskWhen, row: TaskRow) -> Select[Any]:
    """The open tasks in scope, of a running instance in scope, for which
    ``when`` holds, as rows (``since``: the task's ``created_at``)."""
    job_id, detail = row(p)
    query = open_tasks(p, *when(p, no_holder_probe())).add_columns(
        *task_row(p, job_id, tasks.c.created_at, detail)
    )
    return running(p, query)


def token_task_mismatch_when(p: RuleParams, no_holder: ColumnElement[bool]) -> list[Any]:
    return [tasks.c.created_at <= p.cutoff, no_holder]


def token_task_mismatch_row(p: RuleParams) -> tuple[Any, Any]:
    return null(), tasks.c.assignee


def token_task_mismatch(p: RuleParams) -> Select[Any]:
    """An open task whose token is missing, not active, or at another node,
    created at or before the cutoff. The token is one primary-key probe per
    candidate (a scalar subquery)."""
    return _task_rule(p, token_task_mismatch_when, token_task_mismatch_row)


def _broken_dispatch(job_type: str, p: RuleParams) -> Select[Any]:
    """A ``job_type`` job failed or dead while the flow still waits at its
    node (an active token there), it is the node's newest job of that type,
    and no person was handed the node's decision instead (no open approval /
    handle task at the node, as ``dispatchFallback: manual`` creates; a
    repair ``catch`` task there does not count: the failure still awaits
    its repair).

    Driven from the failed and dead jobs of ``job_type`` whose instance is
    running and in scope, found first (a materialized CTE on PostgreSQL: a
    merge join of ``ix_workflow_jobs_broken``, in instance order, with
    ``ix_workflow_instances_running``); only those are checked for a token,
    a newer job and an open task. Left to itself the planner drove it from
    every running instance and its active tokens instead (on the volume
    database 65,000 instances: 540 ms against 100-150 ms)."""
    broken = materialized_cte(
        select(
            *columns(
                jobs.c.instance_id,
                jobs.c.task_id,
                jobs.c.node_key,
                jobs.c.id,
                jobs.c.updated_at,
                func.coalesce(jobs.c.last_error_code, jobs.c.status),
            )
        ).where(
            jobs.c.type == job_type,
            jobs.c.status.in_(BROKEN_JOB),
            jobs.c.instance_id.in_(select(instances.c.id).where(*scope(p))),
            *job_scope(p),
        ),
        f"broken_{job_type}",
    )
    newer = jobs.alias("newer")
    other_task = tasks.alias("other_task")
    return (
        select(
            *columns(
                instances.c.id,
                broken.c.task_id,
                broken.c.node_key,
                broken.c.job_id,
                broken.c.since,
                broken.c.detail,
            )
        )
        .select_from(broken.join(instances, instances.c.id == broken.c.instance_id))
        .where(
            exists().where(
                tokens.c.instance_id == broken.c.instance_id,
                tokens.c.state == TokenState.ACTIVE.value,
                tokens.c.node_key == broken.c.node_key,
            ),
            ~exists().where(
                newer.c.instance_id == broken.c.instance_id,
                newer.c.node_key == broken.c.node_key,
                newer.c.type == job_type,
                newer.c.id > broken.c.job_id,
            ),
            ~exists().where(
                other_task.c.instance_id == broken.c.instance_id,
                other_task.c.node_key == broken.c.node_key,
                other_task.c.status.in_(OPEN_TASK),
                other_task.c.kind.notin_(["external_approval", "trigger", "catch"]),
            ),
            *scope(p),
        )
    )


def external_dispatch_failed(p: RuleParams) -> Select[Any]:
    return _broken_dispatch("external_dispatch", p)


def trigger_execution_failed(p: RuleParams) -> Select[Any]:
    return _broken_dispatch("trigger_dispatch", p)


def external_dispatch_pending_when(p: RuleParams, no_holder: ColumnElement[bool]) -> list[Any]:
    return [
        tasks.c.kind == "external_approval",
        tasks.c.status == TaskStatus.PENDING.value,
        tasks.c.created_at <= p.cutoff,
        ~exists().where(
            task_jobs(
                "external_dispatch",
                jobs.c.status.in_([JobStatus.SUCCEEDED.value, *BROKEN_JOB]),
            )
        ),
    ]


def external_dispatch_pending_row(p: RuleParams) -> tuple[Any, Any]:
    live = select(func.max(jobs.c.id)).where(
        task_jobs("external_dispatch", jobs.c.status.in_(LIVE_JOB))
    )
    return live.scalar_subquery(), literal("")


def external_dispatch_pending(p: RuleParams) -> Select[Any]:
    """A pending external approval task created at or before the cutoff
    whose external_dispatch job has not succeeded (none, or still
    pending/running/paused)."""
    return _task_rule(p, external_dispatch_pending_when, external_dispatch_pending_row)


def trigger_waiting_no_execution_when(p: RuleParams, no_holder: ColumnElement[bool]) -> list[Any]:
    attempted = (
        select(executions.c.id)
        .select_from(executions.join(jobs, jobs.c.id == executions.c.job_id))
        .where(task_jobs("trigger_dispatch"))
    )
    return [
        tasks.c.kind == "trigger",
        tasks.c.status == TaskStatus.WAITING.value,
        tasks.c.created_at <= p.cutoff,
        ~attempted.exists(),
    ]


def trigger_waiting_no_execution(p: RuleParams) -> Select[Any]:
    """A waiting trigger task created at or before the cutoff none of whose
    trigger_dispatch jobs has an attempt row (no job, or never started)."""
    return _task_rule(p, trigger_waiting_no_execution_when, trigger_waiting_no_execution_row)


def trigger_waiting_no_execution_row(p: RuleParams) -> tuple[Any, Any]:
    return latest_job("trigger_dispatch"), literal("")


def subprocess_waiting_when(p: RuleParams, no_holder: ColumnElement[bool]) -> list[Any]:
    return [
        tasks.c.kind == "subprocess",
        tasks.c.status == TaskStatus.WAITING.value,
        tasks.c.created_at <= p.cutoff,
    ]


def subprocess_waiting(p: RuleParams) -> Select[Any]:
    """A waiting subprocess task (the parent) created at or before the
    cutoff; ``detail`` is the child instance id, if one was started."""
    return _task_rule(p, subprocess_waiting_when, subprocess_waiting_row)


def subprocess_waiting_row(p: RuleParams) -> tuple[Any, Any]:
    child = instances.alias("child")
    child_id = (
        select(func.max(child.c.id))
        .where(
            child.c.parent_instance_id == tasks.c.instance_id, child.c.parent_task_id == tasks.c.id
        )
        .scalar_subquery()
    )
    newest = (
        select(func.max(jobs.c.id))
        .where(
            jobs.c.instance_id == tasks.c.instance_id,
            jobs.c.task_id == tasks.c.id,
            jobs.c.type.in_(["subprocess_spawn", "subprocess_join"]),
        )
        .scalar_subquery()
    )
    return newest, child_id


def delay_missing_wake_job_when(p: RuleParams, no_holder: ColumnElement[bool]) -> list[Any]:
    return [
        tasks.c.kind == "delay",
        tasks.c.status == TaskStatus.WAITING.value,
        ~exists().where(task_jobs("delay_wake", jobs.c.status.in_([*LIVE_JOB, *BROKEN_JOB]))),
    ]


def delay_missing_wake_job(p: RuleParams) -> Select[Any]:
    """A waiting delay task with no delay_wake job that could still wake it
    (none pending, running, paused, failed or dead). Any age."""
    return _task_rule(p, delay_missing_wake_job_when, delay_missing_wake_job_row)


def delay_missing_wake_job_row(p: RuleParams) -> tuple[Any, Any]:
    return null(), tasks.c.due_at


def _overdue(
    p: RuleParams, kind_filter: ColumnElement[bool], status: str, job_type: str
) -> Select[Any]:
    """Driven from the jobs of ``job_type`` that are due (a range of
    ``ix_workflow_jobs_task``), then their task by primary key."""
    query = (
        select(*task_row(p, jobs.c.id, jobs.c.run_at, jobs.c.status))
        .select_from(jobs.join(tasks, tasks.c.id == jobs.c.task_id))
        .where(
            jobs.c.type == job_type,
            jobs.c.task_id.isnot(None),
            jobs.c.status.in_(DUE_JOB),
            jobs.c.run_at <= p.due_before,
            jobs.c.instance_id == tasks.c.instance_id,
            kind_filter,
            tasks.c.status == status,
            *task_scope(p),
        )
    )
    return running(p, query)


def delay_overdue(p: RuleParams) -> Select[Any]:
    """A waiting delay task whose delay_wake job was due more than
    :data:`DUE_GRACE` ago and is still pending or running, or failed/dead."""
    return _overdue(p, tasks.c.kind == "delay", TaskStatus.WAITING.value, "delay_wake")


def task_timeout_overdue(p: RuleParams) -> Select[Any]:
    """A pending task whose task_timeout job was due more than
    :data:`DUE_GRACE` ago and is still pending or running, or failed/dead."""
    return _overdue(p, tasks.c.id.isnot(None), TaskStatus.PENDING.value, "task_timeout")


def waiting_task_stuck_when(p: RuleParams, no_holder: ColumnElement[bool]) -> list[Any]:
    return [
        tasks.c.kind.in_(HUMAN_KINDS),
        tasks.c.status == TaskStatus.PENDING.value,
        tasks.c.created_at <= p.cutoff,
    ]


def waiting_task_stuck(p: RuleParams) -> Select[Any]:
    """A pending human task (approval, handle, catch, resubmit) created at
    or before the cutoff; ``detail`` is its assignee."""
    return _task_rule(p, waiting_task_stuck_when, waiting_task_stuck_row)


def waiting_task_stuck_row(p: RuleParams) -> tuple[Any, Any]:
    return null(), tasks.c.assignee


def _outbox(p: RuleParams, status: str, *where: ColumnElement[bool]) -> Select[Any]:
    """Outbox rows of ``status``, one row per instance (null: instance-less
    events), any instance status."""
    own = row_scope(p, outbox)
    if p.definition_key is not None:
        own.append(outbox.c.definition_key == p.definition_value())
    return (
        select(
            *columns(
                outbox.c.instance_id,
                null(),
                null(),
                null(),
                func.min(outbox.c.created_at),
                func.count(),
            )
        )
        .where(outbox.c.status == status, *where, *own)
        .group_by(outbox.c.instance_id)
    )


def workflow_event_outbox_failed(p: RuleParams) -> Select[Any]:
    """Outbox rows marked failed (any age); ``detail``: how many."""
    return _outbox(p, "failed")


def workflow_event_outbox_pending(p: RuleParams) -> Select[Any]:
    """Outbox rows still pending, created at or before the cutoff."""
    return _outbox(p, "pending", outbox.c.created_at <= p.cutoff)


#: the job type of one webhook delivery (SPEC X-5; flowledger.events.webhooks,
#: which this read-only module does not import)
WEBHOOK_DELIVERY = "webhook_delivery"


def webhook_delivery_failed(p: RuleParams) -> Select[Any]:
    """The instance's events whose webhook delivery failed for good: a
    ``webhook_delivery`` job of the instance that is dead, or failed with
    ``external_outcome_unconfirmed`` (L-17: the receiver may or may not
    have it; receivers dedupe on the event id, so a replay is safe). One row
    per instance: ``job_id`` the newest such job, ``since`` the oldest one's
    last change, ``detail`` how many. Any age, any instance status (an
    ended instance's events are delivered too). Driven by
    ``ix_workflow_jobs_broken`` (the failed and dead deliveries, in instance
    order: read from the index alone, grouped without a sort)."""
    own = job_scope(p)
    if p.definition_key is not None:
        own.append(
            jobs.c.instance_id.in_(
                select(instances.c.id).where(instances.c.definition_key == p.definition_value())
            )
        )
    return (
        select(
            *columns(
                jobs.c.instance_id,
                null(),
                null(),
                func.max(jobs.c.id),
                func.min(jobs.c.updated_at),
                func.count(),
            )
        )
        .where(
            jobs.c.type == WEBHOOK_DELIVERY,
            jobs.c.instance_id.isnot(None),
            jobs.c.status.in_(BROKEN_JOB),
            or_(
                jobs.c.status == JobStatus.DEAD.value,
                jobs.c.last_error_code == EXTERNAL_OUTCOME_UNCONFIRMED,
            ),
            *own,
        )
        .group_by(jobs.c.instance_id)
    )


def instance_stalled(p: RuleParams) -> Select[Any]:
    """A running instance with no pending/waiting task and no job pending,
    running or paused; since its last update. Any age."""
    return select(
        *columns(instances.c.id, null(), null(), null(), instances.c.updated_at, literal(""))
    ).where(no_open_task(), no_live_job(), *scope(p))
