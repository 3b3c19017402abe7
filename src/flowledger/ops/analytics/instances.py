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

from flowledger.db.aggregates import count_by_local_day
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.portable import milliseconds_between
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
    async with analytics_read(db) as conn:
        by_status = {s.value: 0 for s in InstanceStatus}
        rows = await conn.execute(
            select(instances.c.status, func.count()).where(*where).group_by(instances.c.status)
        )
        for status, count in rows:
            by_status[status] = int(count)
        finished = (
            await conn.execute(
                select(
                    func.count(),
                    func.avg(milliseconds_between(instances.c.created_at, instances.c.finished_at)),
                ).where(instances.c.finished_at.is_not(None), *where)
            )
        ).one()
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
    return {
        "definitionKey": scope.definition_key,
        "instances": sum(by_status.values()),
        "instancesByStatus": by_status,
        "finished": int(finished[0]),
        "avgDurationMs": ms(finished[1]),
        "pendingTasks": pending,
        "startsLast7Days": int(starts),
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

    async with analytics_read(db) as conn:
        total = func.count().label("total")
        stmt = (
            select(
                instances.c.definition_key,
                total,
                status_count(InstanceStatus.RUNNING).label("running"),
                status_count(InstanceStatus.APPROVED).label("approved"),
                status_count(InstanceStatus.REJECTED).label("rejected"),
                func.avg(
                    milliseconds_between(instances.c.created_at, instances.c.finished_at)
                ).label("avg_ms"),
            )
            .where(
                and_(
                    instances.c.created_at >= now - timedelta(days=days),
                    instances.c.created_at <= now,
                ),
                *scope.instance_filter(),
            )
            .group_by(instances.c.definition_key)
            .order_by(total.desc(), instances.c.definition_key)
            .limit(limit)
        )
        rows = (await conn.execute(stmt)).all()
    return {
        "definitionKey": scope.definition_key,
        "periodDays": days,
        "items": [
            {
                "definitionKey": r.definition_key,
                "total": int(r.total),
                "running": int(r.running),
                "approved": int(r.approved),
                "rejected": int(r.rejected),
                "avgDurationMs": ms(r.avg_ms),
            }
            for r in rows
        ],
    }
