"""Analytics of instances (SPEC O-14): totals, daily starts and finishes,
top definitions. Read-only; every figure is one aggregate query (no per-row
Python) within an :class:`~flowledger.ops.analytics.sql.AnalyticsScope`.

=================  ==========================================================
totals             instances per status (every status, zeros included),
                   ``finished`` (instances with a finish time) and their
                   average duration (created → finished, ms), pending human
                   tasks now, instances started in the last 7 days
daily              starts (``created_at``) and finishes (``finished_at``) per
                   local date of the last ``days`` (default 14, today
                   included, zero days included) in a time zone
top-definitions    per definition key, instances started in the last
                   ``days`` (default 30): total, running, approved, rejected
                   and the average duration of the finished ones; largest
                   first (ties by key), at most ``limit``
=================  ==========================================================

Indexes (PostgreSQL): status counts over ``ix_workflow_instances_tenant_status``
(or ``…_definition`` with a definition filter); the finished average over
the partial ``ix_workflow_instances_finished_id``; starts, daily starts and top
definitions over ``ix_workflow_instances_created_id``; daily finishes over
``…_finished`` — all index-only through their INCLUDE columns. Pending tasks
over the partial ``ix_workflow_tasks_pending``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy import and_, case, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db import count_estimates
from flowledger.db.aggregates import count_by_local_day
from flowledger.db.count_estimates import counts_by
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.portable import milliseconds_between
from flowledger.ops.analytics.sampling import sampling_for
from flowledger.ops.analytics.sql import (
    AnalyticsScope,
    analytics_read,
    day_window,
    ms,
)
from flowledger.states import InstanceStatus, TaskStatus

HUMAN_TASK_KINDS = ("approval", "handle", "catch", "resubmit")
STARTS_WINDOW = timedelta(days=7)


def scoped_tasks(scope: AnalyticsScope) -> tuple[Any, list[Any]]:
    """``workflow_tasks`` and the scope's conditions on it: its tenant and
    its own copy of the definition key (no join to the instance)."""
    where = scope.tenant_filter(tasks.c.tenant_id)
    if scope.definition_key is not None:
        where.append(tasks.c.definition_key == scope.definition_key)
    froms: Any = tasks
    return froms, where


async def _pending_tasks(conn: AsyncConnection, scope: AnalyticsScope) -> int:
    froms, where = scoped_tasks(scope)
    stmt = (
        select(func.count())
        .select_from(froms)
        .where(tasks.c.status == TaskStatus.PENDING, tasks.c.kind.in_(HUMAN_TASK_KINDS), *where)
    )
    return int((await conn.execute(stmt)).scalar_one())


async def totals(db: Database, scope: AnalyticsScope, *, now: datetime) -> dict[str, Any]:
    where = scope.instance_filter()
    estimated: list[str] = []
    async with analytics_read(db) as conn:
        statuses = [s.value for s in InstanceStatus]
        # six statuses, each counted exactly up to a third of the exact-count
        # limit: at 90 days of history the open ones (running, suspended:
        # ~10^4-10^5 rows) stay exact and the terminal ones (10^5-10^6) are
        # estimated; at the full limit each, four statuses of ~10^5 rows were
        # counted together (3.4·10^5 index entries, ~140 ms)
        by_status = await counts_by(
            conn,
            select(instances).where(*where),
            instances.c.status,
            statuses,
            exact_cost_limit=count_estimates.EXACT_COST_LIMIT / 3,
        )
        finished_rows = select(instances).where(instances.c.finished_at.is_not(None), *where)
        finished_stmt = finished_rows.with_only_columns(
            func.count(),
            func.avg(milliseconds_between(instances.c.created_at, instances.c.finished_at)),
        )
        sampling = await sampling_for(conn, instances, finished_rows)
        if sampling is None:
            finished_count, avg = (await conn.execute(finished_stmt)).one()
        else:
            sampled, avg = (await conn.execute(sampling.over(finished_stmt))).one()
            finished_count = sampling.scale(sampled, sampled)
            estimated += ["finished", "avgDurationMs"]
        starts = (
            await conn.execute(
                select(func.count()).where(
                    instances.c.created_at >= now - STARTS_WINDOW,
                    instances.c.created_at <= now,
                    *where,
                )
            )
        ).scalar_one()
        pending = await _pending_tasks(conn, scope)
    if by_status.estimated:
        estimated.append("instances")
    return {
        "definitionKey": scope.definition_key,
        "instances": by_status.total,
        "instancesByStatus": by_status.counts,
        "finished": int(finished_count),
        "avgDurationMs": ms(avg),
        "pendingTasks": pending,
        "startsLast7Days": int(starts),
        "estimated": sorted(estimated),
        "estimatedStatuses": sorted(by_status.estimated),
    }


async def daily(
    db: Database, scope: AnalyticsScope, *, now: datetime, zone: ZoneInfo, days: int = 14
) -> dict[str, Any]:
    dates, start, end = day_window(now, zone, days)
    where = scope.instance_filter()
    async with analytics_read(db) as conn:
        starts = await count_by_local_day(
            conn, instances.c.created_at, where, zone=zone, start=start, end=end
        )
        finishes = await count_by_local_day(
            conn, instances.c.finished_at, where, zone=zone, start=start, end=end
        )
    return {
        "definitionKey": scope.definition_key,
        "timeZone": zone.key,
        "days": [
            {"date": d.isoformat(), "starts": starts.get(d, 0), "finishes": finishes.get(d, 0)}
            for d in dates
        ],
    }


async def top_definitions(
    db: Database, scope: AnalyticsScope, *, now: datetime, days: int = 30, limit: int = 10
) -> dict[str, Any]:
    def status_count(status: InstanceStatus) -> Any:
        return func.sum(case((instances.c.status == status, 1), else_=0))

    period = select(instances).where(
        and_(
            instances.c.created_at >= now - timedelta(days=days),
            instances.c.created_at <= now,
        ),
        *scope.instance_filter(),
    )
    total = func.count().label("total")
    stmt = (
        period.with_only_columns(
            instances.c.definition_key,
            total,
            status_count(InstanceStatus.RUNNING).label("running"),
            status_count(InstanceStatus.APPROVED).label("approved"),
            status_count(InstanceStatus.REJECTED).label("rejected"),
            func.avg(milliseconds_between(instances.c.created_at, instances.c.finished_at)).label(
                "avg_ms"
            ),
            # every group's rows together, before the limit (a sample's scale)
            func.sum(func.count()).over().label("period_rows"),
        )
        .group_by(instances.c.definition_key)
        .order_by(total.desc(), instances.c.definition_key)
        .limit(limit)
    )
    async with analytics_read(db) as conn:
        sampling = await sampling_for(conn, instances, period)
        if sampling is not None:
            stmt = sampling.over(stmt)
        rows = (await conn.execute(stmt)).all()

    def count(value: Any, period_rows: Any) -> int:
        return int(value) if sampling is None else sampling.scale(value, period_rows)

    return {
        "definitionKey": scope.definition_key,
        "periodDays": days,
        "items": [
            {
                "definitionKey": r.definition_key,
                "total": count(r.total, r.period_rows),
                "running": count(r.running, r.period_rows),
                "approved": count(r.approved, r.period_rows),
                "rejected": count(r.rejected, r.period_rows),
                "avgDurationMs": ms(r.avg_ms),
            }
            for r in rows
        ],
        "estimated": [] if sampling is None else list(SAMPLED_DEFINITION_FIGURES),
    }


SAMPLED_DEFINITION_FIGURES = ("total", "running", "approved", "rejected", "avgDurationMs")
