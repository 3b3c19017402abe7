"""The items of a recovery plan for jobs that exist (SPEC O-18), steps 1 to 3
of :mod:`flowledger.ops.recovery.plan`: ``reclaim`` (running jobs whose
lease is missing or expired, or whose execution deadline passed), ``retry``
or ``needs_person`` (dead and failed jobs) and ``wake`` (pending jobs due
for more than :data:`~flowledger.ops.recovery.model.OVERDUE_GRACE`). One
query per group, in id order, within the filter's scope and the action's
job types.

Indexes (PostgreSQL): running jobs ``ix_workflow_jobs_running_lease``; dead /
failed ``ix_workflow_jobs_failure_types`` (type, updated_at); pending due
``ix_workflow_jobs_status_type``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, case, or_, select, true
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.recovery.model import (
    NEEDS_PERSON,
    OVERDUE_GRACE,
    RECLAIM,
    RETRY,
    TASK_STATUS,
    WAKE,
    PlanItem,
    RecoveryFilter,
)
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED


def _job_scope(query: Any, flt: RecoveryFilter, types: Sequence[str], cutoff: datetime) -> Any:
    query = query.where(jobs.c.type.in_(types), jobs.c.created_at <= cutoff)
    if flt.instance_id is not None:
        query = query.where(jobs.c.instance_id == flt.instance_id)
    if flt.tenants is not None:
        query = query.where(jobs.c.tenant_id.in_(flt.tenants))
    return query


_JOB_COLUMNS = (
    jobs.c.id,
    jobs.c.type,
    jobs.c.status,
    jobs.c.instance_id,
    jobs.c.task_id,
    jobs.c.node_key,
    jobs.c.created_at,
)


async def reclaims(
    conn: AsyncConnection,
    flt: RecoveryFilter,
    types: Sequence[str],
    now: datetime,
    cutoff: datetime,
    n: int,
) -> list[PlanItem]:
    query = _job_scope(
        select(*_JOB_COLUMNS, jobs.c.side_effect_at, jobs.c.execution_deadline), flt, types, cutoff
    ).where(
        jobs.c.status == "running",
        or_(
            jobs.c.lease_until.is_(None),
            jobs.c.lease_until < now,
            jobs.c.execution_deadline <= now,
        ),
    )
    rows = (await conn.execute(query.order_by(jobs.c.id).limit(n))).all()
    items = []
    for row in rows:
        reason = "reclaim the expired lease as the drain would"
        if row.side_effect_at is not None:
            reason += (
                " (an unsafe call had started: it becomes dead external_outcome_unconfirmed"
                " for a person to check, never resent)"
            )
        items.append(_job_item(row, RECLAIM, reason))
    return items


def _job_item(row: Any, action: str, reason: str) -> PlanItem:
    return PlanItem(
        action=action,
        target="job",
        reason=reason,
        job_type=row.type,
        job_id=row.id,
        task_id=row.task_id,
        instance_id=row.instance_id,
        node_key=row.node_key,
        status=row.status,
        since=row.created_at,
    )


async def failed_jobs(
    conn: AsyncConnection,
    flt: RecoveryFilter,
    types: Sequence[str],
    cutoff: datetime,
    n: int,
) -> list[PlanItem]:
    task_types = [t for t in types if t in TASK_STATUS]
    expected = case(TASK_STATUS, value=jobs.c.type, else_=None) if task_types else None
    still_open = (
        or_(
            jobs.c.task_id.is_(None),
            and_(tasks.c.status == expected, instances.c.status.in_(["running", "suspended"])),
        )
        if expected is not None
        else true()
    )
    query = _job_scope(
        select(*_JOB_COLUMNS, jobs.c.last_error_code, instances.c.status.label("instance_status"))
        .select_from(
            jobs.outerjoin(tasks, tasks.c.id == jobs.c.task_id).outerjoin(
                instances, instances.c.id == jobs.c.instance_id
            )
        )
        .where(jobs.c.status.in_(["dead", "failed"]), still_open),
        flt,
        types,
        cutoff,
    )
    rows = (await conn.execute(query.order_by(jobs.c.id).limit(n))).all()
    items = []
    for row in rows:
        if row.last_error_code == EXTERNAL_OUTCOME_UNCONFIRMED:
            reason = (
                "external outcome unconfirmed (L-17): check the receiver, then retry, skip or"
                " handle it by hand; a recovery never resends it"
            )
            items.append(_job_item(row, NEEDS_PERSON, reason))
        elif row.instance_status == "suspended" and row.type in TASK_STATUS:
            reason = "the instance is suspended: resume it first"
            items.append(_job_item(row, NEEDS_PERSON, reason))
        else:
            reason = f"manual retry of the {row.status} job (new generation, attempts reset)"
            items.append(_job_item(row, RETRY, reason))
    return items


async def overdue_jobs(
    conn: AsyncConnection,
    flt: RecoveryFilter,
    types: Sequence[str],
    now: datetime,
    cutoff: datetime,
    n: int,
) -> list[PlanItem]:
    query = _job_scope(select(*_JOB_COLUMNS, jobs.c.run_at), flt, types, cutoff).where(
        jobs.c.status == "pending", jobs.c.run_at <= now - OVERDUE_GRACE
    )
    rows = (await conn.execute(query.order_by(jobs.c.id).limit(n))).all()
    return [
        _job_item(row, WAKE, f"due since {row.run_at.isoformat()} and not claimed: wake its pool")
        for row in rows
    ]


__all__ = ["failed_jobs", "overdue_jobs", "reclaims"]
