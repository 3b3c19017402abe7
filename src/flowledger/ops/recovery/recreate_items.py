"""The ``recreate`` items of a recovery plan (SPEC O-18), step 4 of
:mod:`flowledger.ops.recovery.plan`: tasks that wait for a job that does not
exist ("missing": no job of the type for the task other than canceled ones;
a keyed job is recreated by retrying its newest canceled one), parents
waiting on a child that already ended without a join job, and event outbox
rows (``failed`` ones, and ``pending`` ones while no event_dispatch job is
waiting or running). One query per group, in id order, within the filter's
scope.

Indexes (PostgreSQL): missing jobs ``ix_workflow_tasks_tenant_status`` then
``ix_workflow_jobs_instance`` (instance_id, status) for the NOT EXISTS;
children ``ix_workflow_instances_parent``; outbox
``ix_workflow_event_outbox_status``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_event_outbox as outbox
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.recovery.model import RECREATE, TASK_STATUS, PlanItem, RecoveryFilter
from flowledger.states import TERMINAL_INSTANCE_STATUSES

_LIVE = ("pending", "running", "paused")
_TERMINAL = sorted(s.value for s in TERMINAL_INSTANCE_STATUSES)


def _task_scope(query: Any, flt: RecoveryFilter, cutoff: datetime) -> Any:
    query = query.where(tasks.c.created_at <= cutoff, instances.c.status == "running")
    if flt.instance_id is not None:
        query = query.where(tasks.c.instance_id == flt.instance_id)
    if flt.tenants is not None:
        query = query.where(tasks.c.tenant_id.in_(flt.tenants))
    return query


def _no_job(job_type: str, *, task_id: Any) -> Any:
    """No job of ``job_type`` for the task other than canceled ones."""
    return ~exists().where(
        jobs.c.instance_id == tasks.c.instance_id,
        jobs.c.task_id == task_id,
        jobs.c.type == job_type,
        jobs.c.status != "canceled",
    )


def _canceled_job(job_type: str) -> Any:
    """The newest canceled job of ``job_type`` for the task (a keyed job is
    recreated by retrying it: its idempotency key is taken)."""
    return (
        select(jobs.c.id)
        .where(
            jobs.c.instance_id == tasks.c.instance_id,
            jobs.c.task_id == tasks.c.id,
            jobs.c.type == job_type,
            jobs.c.status == "canceled",
        )
        .order_by(jobs.c.id.desc())
        .limit(1)
        .scalar_subquery()
    )


_TASK_COLUMNS = (
    tasks.c.id,
    tasks.c.instance_id,
    tasks.c.node_key,
    tasks.c.status,
    tasks.c.created_at,
)
_TASK_FROM = tasks.join(instances, instances.c.id == tasks.c.instance_id)


def _task_item(row: Any, job_type: str, reason: str, **extra: Any) -> PlanItem:
    return PlanItem(
        action=RECREATE,
        target="task",
        reason=reason,
        job_type=job_type,
        task_id=row.id,
        instance_id=row.instance_id,
        node_key=row.node_key,
        status=row.status,
        since=row.created_at,
        **extra,
    )


async def missing_for_tasks(
    conn: AsyncConnection,
    flt: RecoveryFilter,
    job_type: str,
    cutoff: datetime,
    n: int,
) -> list[PlanItem]:
    """Tasks that wait for a ``job_type`` job that does not exist."""
    status = TASK_STATUS[job_type]
    query = _task_scope(
        select(*_TASK_COLUMNS, _canceled_job(job_type).label("canceled_job_id")).select_from(
            _TASK_FROM
        ),
        flt,
        cutoff,
    ).where(tasks.c.status == status, _no_job(job_type, task_id=tasks.c.id))
    if job_type == "delay_wake":
        query = query.where(tasks.c.kind == "delay")
    elif job_type == "task_timeout":
        query = query.where(tasks.c.due_at.is_not(None), tasks.c.kind.in_(["approval", "handle"]))
    elif job_type == "trigger_dispatch":
        query = query.where(tasks.c.kind == "trigger")
    elif job_type == "external_dispatch":
        query = query.where(tasks.c.kind == "external_approval")
    elif job_type == "subprocess_spawn":
        kids = instances.alias("kids")
        child = select(kids.c.id).where(kids.c.parent_task_id == tasks.c.id)
        query = query.where(tasks.c.kind == "subprocess", ~child.exists())
    rows = (await conn.execute(query.order_by(tasks.c.id).limit(n))).all()
    reason = f"the task waits for a {job_type} job that does not exist: recreate it"
    return [
        _task_item(row, job_type, reason, canceled_job_id=row.canceled_job_id)
        if job_type not in ("delay_wake", "task_timeout")
        else _task_item(row, job_type, reason)
        for row in rows
    ]


async def missing_joins(
    conn: AsyncConnection, flt: RecoveryFilter, cutoff: datetime, n: int
) -> list[PlanItem]:
    """Parents waiting on a child that already ended, without a join job."""
    child = instances.alias("child")
    query = _task_scope(
        select(
            *_TASK_COLUMNS,
            child.c.id.label("child_id"),
            child.c.status.label("child_status"),
            _canceled_job("subprocess_join").label("canceled_job_id"),
        ).select_from(_TASK_FROM.join(child, child.c.parent_task_id == tasks.c.id)),
        flt,
        cutoff,
    ).where(
        tasks.c.kind == "subprocess",
        tasks.c.status == "waiting",
        child.c.status.in_(_TERMINAL),
        _no_job("subprocess_join", task_id=tasks.c.id),
    )
    rows = (await conn.execute(query.order_by(tasks.c.id).limit(n))).all()
    return [
        _task_item(
            row,
            "subprocess_join",
            f"child instance {row.child_id} ended {row.child_status} but no join job exists:"
            " recreate it",
            child_instance_id=row.child_id,
            canceled_job_id=row.canceled_job_id,
        )
        for row in rows
    ]


async def outbox_rows(
    conn: AsyncConnection, flt: RecoveryFilter, cutoff: datetime, n: int
) -> list[PlanItem]:
    """Failed outbox rows, and pending ones while no dispatch job is live."""
    live = exists().where(jobs.c.type == "event_dispatch", jobs.c.status.in_(_LIVE))
    no_live = (await conn.execute(select(~live))).scalar_one()
    statuses = ["failed", "pending"] if no_live else ["failed"]
    query = select(outbox.c.id, outbox.c.instance_id, outbox.c.status, outbox.c.created_at).where(
        outbox.c.status.in_(statuses), outbox.c.created_at <= cutoff
    )
    if flt.instance_id is not None:
        query = query.where(outbox.c.instance_id == flt.instance_id)
    if flt.tenants is not None:
        query = query.where(outbox.c.tenant_id.in_(flt.tenants))
    rows = (await conn.execute(query.order_by(outbox.c.id).limit(n))).all()
    items = []
    for row in rows:
        reason = (
            "failed outbox row: make it pending again and make sure a dispatch job is live"
            if row.status == "failed"
            else "pending outbox row without a live dispatch job: enqueue one"
        )
        items.append(
            PlanItem(
                action=RECREATE,
                target="outbox",
                reason=reason,
                job_type="event_dispatch",
                outbox_id=row.id,
                instance_id=row.instance_id,
                status=row.status,
                since=row.created_at,
            )
        )
    return items


__all__ = ["missing_for_tasks", "missing_joins", "outbox_rows"]
