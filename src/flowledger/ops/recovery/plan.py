"""Targeted recovery, the read side (SPEC O-18): which jobs, tasks and
outbox rows a recovery action would touch, and what it would do to each.
The preview shows this plan; the run (:mod:`flowledger.ops.recovery.actions`)
computes the same plan and walks it, so a preview equals the run that
follows it on an unchanged engine. This module reads the plan: it checks the
action, the filter and the instance, then takes the groups below in order
until the limit is reached. The actions, the job types each owns (never
looking at others), the filter and the plan's types are
:mod:`flowledger.ops.recovery.model`; the queries of steps 1 to 3
:mod:`flowledger.ops.recovery.job_items`, of step 4
:mod:`flowledger.ops.recovery.recreate_items`.

The plan is at most ``limit`` items, taken in this order (each group by id):

1. ``reclaim`` — running jobs whose lease is missing or expired, or whose
   execution deadline passed: reclaimed as the drain would (pending with
   backoff, or dead when exhausted; one with a side-effect marker becomes
   the L-17 dead letter — nothing is resent).
2. ``retry`` — dead and failed jobs: a manual retry (new generation,
   attempts reset, earlier attempt rows kept), staggered. A job of a node
   (its task set) is taken only while its task still waits as the job needs
   (delay / trigger / subprocess ``waiting``; timeout and external approval
   ``pending``) on a running instance — a retry of a job whose task has
   ended would only be skipped by its handler. Instead of a retry,
   ``needs_person``: a job whose outcome is unconfirmed (L-17,
   ``external_outcome_unconfirmed``: it is never resent by a recovery), and a
   job of a suspended instance (resume it first).
3. ``wake`` — pending jobs due for more than
   :data:`~flowledger.ops.recovery.model.OVERDUE_GRACE` and not claimed:
   their pool gets a fresh wake hint.
4. ``recreate`` — missing jobs: a waiting delay task with no wake job
   (delay-wake); a pending task with a due time and no timeout job
   (task-timeout); a waiting subprocess task whose child already ended
   without a join job, or that has neither a child nor a spawn job
   (subprocess); a waiting trigger task without a dispatch job
   (trigger-dispatch); an external approval task never dispatched
   (external-dispatch); "missing" means no job of the type for the task
   other than canceled ones. For event-dispatch: a ``failed`` outbox row (made
   pending again) and a ``pending`` outbox row while no event_dispatch job
   is waiting or running.

Filters: ``instance_id``; ``min_age`` — since enqueue for jobs, since the
task was created for missing task jobs, since the row was written for
outbox rows; tenant scope (A-3: jobs, tasks and outbox rows of the caller's
tenants only). Time is the caller's ``now`` (database time in production).

Indexes (PostgreSQL): running jobs ``ix_workflow_jobs_running_lease``; dead /
failed ``ix_workflow_jobs_failure_types`` (type, updated_at); pending due
``ix_workflow_jobs_status_type``; missing jobs ``ix_workflow_tasks_tenant_status``
then ``ix_workflow_jobs_instance`` (instance_id, status) for the NOT EXISTS;
children ``ix_workflow_instances_parent``; outbox
``ix_workflow_event_outbox_status``. A handful of queries per plan, never
one per item.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.errors import NotFoundError
from flowledger.ops.recovery.job_items import failed_jobs, overdue_jobs, reclaims
from flowledger.ops.recovery.model import (
    TASK_STATUS,
    PlanItem,
    RecoveryFilter,
    RecoveryPlan,
    check_filter,
    job_types,
)
from flowledger.ops.recovery.recreate_items import missing_for_tasks, missing_joins, outbox_rows


async def _visible_instance(conn: AsyncConnection, flt: RecoveryFilter) -> None:
    if flt.instance_id is None:
        return
    query = select(instances.c.id).where(instances.c.id == flt.instance_id)
    if flt.tenants is not None:
        query = query.where(instances.c.tenant_id.in_(flt.tenants))
    if (await conn.execute(query)).first() is None:
        raise NotFoundError(f"instance {flt.instance_id} not found", field="instanceId")


async def plan_in(
    conn: AsyncConnection, action: str, flt: RecoveryFilter, *, now: datetime
) -> RecoveryPlan:
    """The plan of ``action`` read on ``conn`` (see the module doc)."""
    types = job_types(action)
    check_filter(flt)
    await _visible_instance(conn, flt)
    cutoff = now - timedelta(minutes=flt.min_age_minutes)
    items: list[PlanItem] = []

    def left() -> int:
        return flt.limit - len(items)

    items += await reclaims(conn, flt, types, now, cutoff, left())
    if left():
        items += await failed_jobs(conn, flt, types, cutoff, left())
    if left():
        items += await overdue_jobs(conn, flt, types, now, cutoff, left())
    for job_type in types:
        if not left():
            break
        if job_type == "event_dispatch":
            items += await outbox_rows(conn, flt, cutoff, left())
        elif job_type == "subprocess_join":
            items += await missing_joins(conn, flt, cutoff, left())
        elif job_type in TASK_STATUS:
            items += await missing_for_tasks(conn, flt, job_type, cutoff, left())
    return RecoveryPlan(action, items)


async def recovery_preview(
    db: Database, action: str, flt: RecoveryFilter, *, now: datetime
) -> RecoveryPlan:
    """What a run of ``action`` with ``flt`` would touch now."""
    job_types(action)
    async with db.read() as conn:
        return await plan_in(conn, action, flt, now=now)


__all__ = ["plan_in", "recovery_preview"]
