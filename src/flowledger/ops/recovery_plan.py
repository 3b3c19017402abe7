"""Targeted recovery, the read side (SPEC O-18): which jobs, tasks and
outbox rows a recovery action would touch, and what it would do to each.
The preview shows this plan; the run (:mod:`flowledger.ops.recovery_actions`)
computes the same plan and walks it, so a preview equals the run that
follows it on an unchanged engine.

Each action owns job types and never looks at others:

=====================  ===========================================
``event-dispatch``     event_dispatch (+ the event outbox)
``trigger-dispatch``   trigger_dispatch
``delay-wake``         delay_wake
``task-timeout``       task_timeout
``subprocess``         subprocess_spawn, subprocess_join
``webhook-delivery``   webhook_delivery
``external-dispatch``  external_dispatch
=====================  ===========================================

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
3. ``wake`` — pending jobs due for more than :data:`OVERDUE_GRACE` and not
   claimed: their pool gets a fresh wake hint.
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

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, exists, or_, select, true
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox as outbox
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import FlowledgerError, NotFoundError
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED, TERMINAL_INSTANCE_STATUSES

ACTIONS: dict[str, tuple[str, ...]] = {
    "event-dispatch": ("event_dispatch",),
    "trigger-dispatch": ("trigger_dispatch",),
    "delay-wake": ("delay_wake",),
    "task-timeout": ("task_timeout",),
    "subprocess": ("subprocess_spawn", "subprocess_join"),
    "webhook-delivery": ("webhook_delivery",),
    "external-dispatch": ("external_dispatch",),
}
# the task status a job of each node type needs to still have work to do
TASK_STATUS: dict[str, str] = {
    "delay_wake": "waiting",
    "task_timeout": "pending",
    "subprocess_spawn": "waiting",
    "subprocess_join": "waiting",
    "trigger_dispatch": "waiting",
    "external_dispatch": "pending",
}
OVERDUE_GRACE = timedelta(seconds=60)
DEFAULT_LIMIT = 100
MAX_LIMIT = 500
PREVIEW_SAMPLES = 20

RETRY, WAKE, RECLAIM, RECREATE = "retry", "wake", "reclaim", "recreate"
NEEDS_PERSON = "needs_person"
_LIVE = ("pending", "running", "paused")
_TERMINAL = sorted(s.value for s in TERMINAL_INSTANCE_STATUSES)


class UnknownRecoveryAction(NotFoundError):
    code = "unknown_recovery_action"


@dataclass(frozen=True)
class RecoveryFilter:
    instance_id: int | None = None
    min_age_minutes: int = 0
    limit: int = DEFAULT_LIMIT
    tenants: tuple[str, ...] | None = None  # None: every tenant


@dataclass(frozen=True)
class PlanItem:
    """One thing a recovery run would touch, and how."""

    action: str  # retry | wake | reclaim | recreate | needs_person
    target: str  # job | task | outbox
    reason: str
    job_type: str | None = None
    job_id: int | None = None
    task_id: int | None = None
    instance_id: int | None = None
    outbox_id: int | None = None
    node_key: str | None = None
    status: str | None = None  # the job's, task's or outbox row's status
    since: datetime | None = None
    child_instance_id: int | None = None  # subprocess_join recreate
    canceled_job_id: int | None = None  # recreate by retrying this canceled job

    def public(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class RecoveryPlan:
    action: str
    items: list[PlanItem]

    @property
    def by_action(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.items:
            counts[item.action] = counts.get(item.action, 0) + 1
        return counts


def job_types(action: str) -> tuple[str, ...]:
    """The job types ``action`` owns; :class:`UnknownRecoveryAction` (404)
    for an action that does not exist."""
    try:
        return ACTIONS[action]
    except KeyError:
        raise UnknownRecoveryAction(
            f"unknown recovery action {action!r}; one of {', '.join(ACTIONS)}",
            field="action",
            actions=list(ACTIONS),
        ) from None


def check_filter(flt: RecoveryFilter) -> None:
    if not 1 <= flt.limit <= MAX_LIMIT:
        raise FlowledgerError(f"limit must be 1 to {MAX_LIMIT}", field="limit")
    if flt.min_age_minutes < 0:
        raise FlowledgerError("minAgeMinutes must not be negative", field="minAgeMinutes")


# ------------------------------------------------------------------ queries


def _job_scope(query: Any, flt: RecoveryFilter, types: Sequence[str], cutoff: datetime) -> Any:
    query = query.where(jobs.c.type.in_(types), jobs.c.created_at <= cutoff)
    if flt.instance_id is not None:
        query = query.where(jobs.c.instance_id == flt.instance_id)
    if flt.tenants is not None:
        query = query.where(jobs.c.tenant_id.in_(flt.tenants))
    return query


def _task_scope(query: Any, flt: RecoveryFilter, cutoff: datetime) -> Any:
    query = query.where(tasks.c.created_at <= cutoff, instances.c.status == "running")
    if flt.instance_id is not None:
        query = query.where(tasks.c.instance_id == flt.instance_id)
    if flt.tenants is not None:
        query = query.where(tasks.c.tenant_id.in_(flt.tenants))
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


async def _reclaims(
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


async def _failed(
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


async def _overdue(
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


async def _missing_for_tasks(
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


async def _missing_joins(
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


async def _outbox_rows(
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

    items += await _reclaims(conn, flt, types, now, cutoff, left())
    if left():
        items += await _failed(conn, flt, types, cutoff, left())
    if left():
        items += await _overdue(conn, flt, types, now, cutoff, left())
    for job_type in types:
        if not left():
            break
        if job_type == "event_dispatch":
            items += await _outbox_rows(conn, flt, cutoff, left())
        elif job_type == "subprocess_join":
            items += await _missing_joins(conn, flt, cutoff, left())
        elif job_type in TASK_STATUS:
            items += await _missing_for_tasks(conn, flt, job_type, cutoff, left())
    return RecoveryPlan(action, items)


async def recovery_preview(
    db: Database, action: str, flt: RecoveryFilter, *, now: datetime
) -> RecoveryPlan:
    """What a run of ``action`` with ``flt`` would touch now."""
    job_types(action)
    async with db.read() as conn:
        return await plan_in(conn, action, flt, now=now)


__all__ = [
    "ACTIONS",
    "NEEDS_PERSON",
    "RECLAIM",
    "RECREATE",
    "RETRY",
    "WAKE",
    "PlanItem",
    "RecoveryFilter",
    "RecoveryPlan",
    "UnknownRecoveryAction",
    "job_types",
    "plan_in",
    "recovery_preview",
]
