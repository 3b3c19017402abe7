"""The runtime status panel (SPEC L-23, seed 001 运行状态面板): the health of
the ledger and its execution pools at one instant. Global — never narrowed by
a list filter or a tenant. Read-only.

Every figure, exactly (``now`` is the database's time unless given):

=====================  ======================================================
liveWorkers            nodes with the ``worker`` role, a ledger pool among
                       their pools and a heartbeat within 10 min (``total``);
                       ``active``: of those, status active with a heartbeat
                       within 90 s
slots                  ``inUse`` / ``capacity`` summed over those live nodes
                       (API-only or scheduler-only nodes never count)
inFlight               running jobs
stuck                  running jobs whose lease is missing or expired
                       (``lease_until`` NULL or < now) or whose execution
                       deadline has been reached (``<= now``)
backlog                pending jobs with ``run_at <= now`` (human tasks are
                       not jobs, so they never count)
oldestQueuedSeconds    now - the earliest ``run_at`` of those; null if none
queueP95Ms, queueP99Ms percentiles (continuous, linear interpolation) of
                       ``started_at - scheduled_at`` over attempts started in
                       the last hour; null without samples
dead                   dead jobs
lastClaimAt            the latest ``started_at`` of any attempt
failureRate1h          failed attempts / attempts started in the last hour;
                       null when none
avgDurationMs1h        mean ``duration_ms`` of attempts started in the last
                       hour that have one; null when none
pausedScopes           the paused pools and job types (issue 31 item 3):
                       scope, value, pausedBy, reason, since — their due
                       jobs still count in backlog (they wait, unclaimed)
=====================  ======================================================

"The last hour" is ``now - 1 h <= started_at <= now``.

The job and attempt figures can also be narrowed to some tenants (the jobs'
``tenant_id``; an attempt belongs to its job's tenant) through
:func:`job_figures` and :func:`attempt_figures` — what the alert metrics of
SPEC O-22 use, so they keep exactly these definitions. The panel itself
stays global. Percentiles are
computed by PostgreSQL's ``percentile_cont``; on SQLite the hour's delays
(bounded by one hour of claims) are fetched and interpolated the same way in
Python (:func:`flowledger.db.aggregates.interval_percentiles`), so both
backends give the same number (rounded to 0.001 ms).

Indexes (PostgreSQL plans, all index-only): running and stuck count over the
partial ``ix_workflow_jobs_running_lease`` (lease_until, including the
execution deadline); backlog and the oldest due job over the partial
``…_claim_due`` (pending only); dead over ``…_status_type`` (its ``dead``
range); the last claim is one backward step of
``ix_workflow_job_executions_started``, and the hour's attempt figures a
range scan of it; nodes by ``…_nodes_heartbeat``.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import and_, case, func, or_, select, true
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.aggregates import interval_percentiles
from flowledger.db.aggregates import percentile_cont as percentile_cont  # its former home
from flowledger.db.database import Database
from flowledger.db.schema import system_scheduler_nodes as nodes
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.pauses import pauses_list
from flowledger.states import AttemptStatus, JobStatus, Pool

LIVE_WINDOW = timedelta(minutes=10)
ACTIVE_WINDOW = timedelta(seconds=90)
RATE_WINDOW = timedelta(hours=1)
WORKER_ROLE = "worker"
LEDGER_POOLS = frozenset(p.value for p in Pool)


def _ms(value: float | None) -> float | None:
    return None if value is None else round(float(value), 3)


def _is_ledger_worker(roles: Any, pools: Any) -> bool:
    pool_names = set(pools) if isinstance(pools, (dict, list)) else set()
    return WORKER_ROLE in (roles or []) and bool(pool_names & LEDGER_POOLS)


async def _workers(conn: AsyncConnection, now: datetime) -> dict[str, Any]:
    rows = await conn.execute(
        select(
            nodes.c.roles,
            nodes.c.pools,
            nodes.c.status,
            nodes.c.heartbeat_at,
            nodes.c.slots_in_use,
            nodes.c.slots_capacity,
        ).where(nodes.c.heartbeat_at >= now - LIVE_WINDOW)
    )
    live = [r for r in rows if _is_ledger_worker(r.roles, r.pools)]
    active = [r for r in live if r.status == "active" and r.heartbeat_at >= now - ACTIVE_WINDOW]
    return {
        "liveWorkers": {"active": len(active), "total": len(live)},
        "slots": {
            "inUse": sum(r.slots_in_use for r in live),
            "capacity": sum(r.slots_capacity for r in live),
        },
    }


def _job_tenants(tenant_ids: Sequence[str] | None) -> Any:
    return true() if tenant_ids is None else jobs.c.tenant_id.in_(list(tenant_ids))


async def _job_counts(
    conn: AsyncConnection, now: datetime, tenant_ids: Sequence[str] | None = None
) -> dict[str, Any]:
    """Two round trips, each count over its own partial index."""
    scope = _job_tenants(tenant_ids)
    running = and_(jobs.c.status == JobStatus.RUNNING, scope)
    stuck = or_(
        jobs.c.lease_until.is_(None), jobs.c.lease_until < now, jobs.c.execution_deadline <= now
    )

    def count(*where: Any) -> Any:
        return select(func.count()).select_from(jobs).where(*where).scalar_subquery()

    row = (
        await conn.execute(
            select(
                count(running).label("in_flight"),
                count(running, stuck).label("stuck"),
                count(jobs.c.status == JobStatus.DEAD, scope).label("dead"),
                select(func.max(executions.c.started_at)).scalar_subquery().label("last_claim"),
            )
        )
    ).one()
    backlog, oldest = (
        await conn.execute(
            select(func.count(), func.min(jobs.c.run_at)).where(
                jobs.c.status == JobStatus.PENDING, jobs.c.run_at <= now, scope
            )
        )
    ).one()
    return {
        "inFlight": row.in_flight,
        "stuck": row.stuck,
        "backlog": backlog,
        "oldestQueuedSeconds": None if oldest is None else round((now - oldest).total_seconds(), 3),
        "dead": row.dead,
        "lastClaimAt": row.last_claim,
    }


def _last_hour(now: datetime) -> Any:
    return and_(executions.c.started_at >= now - RATE_WINDOW, executions.c.started_at <= now)


async def _attempt_figures(
    conn: AsyncConnection, now: datetime, tenant_ids: Sequence[str] | None = None
) -> dict[str, Any]:
    failed = case((executions.c.status == AttemptStatus.FAILED, 1), else_=0)
    query = select(
        func.count().label("attempts"),
        func.coalesce(func.sum(failed), 0).label("failed"),
        func.count(executions.c.duration_ms).label("timed"),
        func.coalesce(func.sum(executions.c.duration_ms), 0).label("duration"),
    ).where(_last_hour(now))
    if tenant_ids is not None:  # the hour's attempts, joined to their jobs by primary key
        query = query.join_from(executions, jobs, jobs.c.id == executions.c.job_id).where(
            _job_tenants(tenant_ids)
        )
    row = (await conn.execute(query)).one()
    return {
        "failureRate1h": row.failed / row.attempts if row.attempts else None,
        "avgDurationMs1h": _ms(row.duration / row.timed) if row.timed else None,
        "attempts1h": row.attempts,
        "failedAttempts1h": int(row.failed),
    }


async def _queue_percentiles(conn: AsyncConnection, now: datetime) -> tuple[Any, Any]:
    p95, p99 = await interval_percentiles(
        conn, executions.c.scheduled_at, executions.c.started_at, _last_hour(now), (0.95, 0.99)
    )
    return _ms(p95), _ms(p99)


async def job_figures(
    conn: AsyncConnection, now: datetime, tenant_ids: Sequence[str] | None = None
) -> dict[str, Any]:
    """``inFlight``, ``stuck``, ``backlog``, ``oldestQueuedSeconds``, ``dead``
    and ``lastClaimAt`` (global), counting only jobs of ``tenant_ids``
    (None: every job)."""
    return await _job_counts(conn, now, tenant_ids)


async def attempt_figures(
    conn: AsyncConnection, now: datetime, tenant_ids: Sequence[str] | None = None
) -> dict[str, Any]:
    """``failureRate1h``, ``avgDurationMs1h``, ``attempts1h`` and
    ``failedAttempts1h`` over attempts of jobs of ``tenant_ids`` (None: all)."""
    return await _attempt_figures(conn, now, tenant_ids)


async def worker_figures(conn: AsyncConnection, now: datetime) -> dict[str, Any]:
    """``liveWorkers`` and ``slots`` (nodes are not per tenant)."""
    return await _workers(conn, now)


async def runtime_figures(conn: AsyncConnection, now: datetime) -> dict[str, Any]:
    """The job and attempt figures (stuck, backlog, oldest queued, dead,
    failure rate, …) on an open connection, for the health score (SPEC O-16)."""
    figures = await _job_counts(conn, now)
    figures.update(await _attempt_figures(conn, now))
    return figures


async def runtime_status(db: Database, *, now: datetime | None = None) -> dict[str, Any]:
    """Every figure of SPEC L-23 at ``now`` (default: the database's clock)."""
    if now is None:
        now = await db.now()
    async with db.read() as conn:
        status: dict[str, Any] = {"now": now}
        status.update(await _workers(conn, now))
        status.update(await _job_counts(conn, now))
        p95, p99 = await _queue_percentiles(conn, now)
        status.update(queueP95Ms=p95, queueP99Ms=p99)
        status.update(await _attempt_figures(conn, now))
        status["pausedScopes"] = [
            {
                "scope": p.scope,
                "value": p.value,
                "pausedBy": p.paused_by,
                "reason": p.reason,
                "since": p.since,
            }
            for p in await pauses_list(conn)
        ]
    return status
