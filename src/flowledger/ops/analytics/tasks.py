"""Analytics of human tasks (SPEC O-14): node bottlenecks, approver workload
and timeouts. Read-only aggregate queries within an
:class:`~flowledger.ops.analytics.sql.AnalyticsScope`. Human tasks are the
kinds a person acts on (approval, handle, catch, resubmit); system, delay,
trigger, subprocess and cc tasks never count.

==================  =========================================================
node-bottlenecks    per (definition key, node key): ``handled`` (tasks
                    completed in the last ``days``), their average and p90
                    handling time (created → finished, ms), ``backlog``
                    (pending now); most backlog first, then slowest
approver-workload   per assignee: ``pending`` now, ``handled`` (completed in
                    the last ``days``) and their average handling time (ms);
                    most pending first, then most handled
timeouts            ``overdue`` (pending with ``due_at < now``), ``dueWithin24h``
                    (pending with ``now <= due_at < now + 24 h``), ``dueSoon``
                    (within the instances list's due-soon window, 4 h),
                    ``escalated`` (pending, escalated by a deadline's chain;
                    issue 31 item 4) and the overdue tasks with their
                    ``escalatedAt``, most overdue first, at most ``limit``
==================  =========================================================

Indexes (PostgreSQL): node bottlenecks walk the (definition, node) keys of
the partial ``ix_workflow_tasks_node_finished`` (completed human tasks by
definition key, node and finished_at) and read each node's tasks of the
period from its own range of it; approver workload reads the completed tasks
of the period over the partial ``ix_workflow_tasks_finished`` (finished_at,
including definition key, node, assignee, kind and created_at); pending ones
over the partial ``ix_workflow_tasks_pending``, due times over the partial
``ix_workflow_tasks_due`` — each an index-only scan. The definition key is
the task's own copy of its instance's (``workflow_tasks.definition_key``,
migration 0013): no panel here joins ``workflow_instances``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.aggregates import grouped_stats
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.portable import milliseconds_between
from flowledger.engine.deadlines import DUE_SOON as DEADLINE_DUE_SOON
from flowledger.ops.analytics.instances import HUMAN_TASK_KINDS, scoped_tasks
from flowledger.ops.analytics.sampling import Sampling, sampling_for
from flowledger.ops.analytics.sql import (
    AnalyticsScope,
    analytics_read,
    ms,
)
from flowledger.states import TaskStatus

DUE_SOON = timedelta(hours=24)


# completed human tasks: the predicate of ix_workflow_tasks_node_finished,
# whose (definition, node) keys the node-bottleneck panel walks
_COMPLETED_HUMAN = (tasks.c.status == TaskStatus.COMPLETED, tasks.c.kind.in_(HUMAN_TASK_KINDS))


def _handled(scope: AnalyticsScope, now: datetime, days: int) -> list[Any]:
    _froms, where = scoped_tasks(scope)
    return [
        tasks.c.status == TaskStatus.COMPLETED,
        tasks.c.finished_at >= now - timedelta(days=days),
        tasks.c.finished_at <= now,
        tasks.c.kind.in_(HUMAN_TASK_KINDS),
        *where,
    ]


def _pending(scope: AnalyticsScope) -> list[Any]:
    _froms, where = scoped_tasks(scope)
    return [tasks.c.status == TaskStatus.PENDING, tasks.c.kind.in_(HUMAN_TASK_KINDS), *where]


async def _handling_by(
    conn: AsyncConnection,
    keys: list[Any],
    where: list[Any],
    froms: Any,
    sampling: Sampling | None = None,
) -> dict[tuple[Any, ...], tuple[int, float | None]]:
    """Count and mean handling time per group; over ``sampling``'s sample
    (counts scaled to the table) when given."""
    handling = milliseconds_between(tasks.c.created_at, tasks.c.finished_at)
    stmt = (
        select(*keys, func.count(), func.avg(handling))
        .select_from(froms)
        .where(*where)
        .group_by(*keys)
    )
    if sampling is None:
        rows = await conn.execute(stmt)
        return {tuple(r[: len(keys)]): (int(r[-2]), r[-1]) for r in rows}
    found = (await conn.execute(sampling.over(stmt))).all()
    sampled = sum(int(r[-2]) for r in found)
    return {tuple(r[: len(keys)]): (sampling.scale(r[-2], sampled), r[-1]) for r in found}


async def node_bottlenecks(
    db: Database, scope: AnalyticsScope, *, now: datetime, days: int = 30, limit: int = 50
) -> dict[str, Any]:
    froms, _where = scoped_tasks(scope)
    keys = [tasks.c.definition_key, tasks.c.node_key]
    handled_where = _handled(scope, now, days)
    handling = milliseconds_between(tasks.c.created_at, tasks.c.finished_at)
    async with analytics_read(db) as conn:
        sampling = await sampling_for(conn, tasks, select(tasks).where(*handled_where))
        if sampling is None:
            handled = await grouped_stats(
                conn, keys, handling, handled_where, froms, groups_where=_COMPLETED_HUMAN
            )
        else:
            sampled = await grouped_stats(
                conn,
                [sampling.over(k) for k in keys],
                sampling.over(handling),
                [sampling.over(w) for w in handled_where],
                sampling.sample,
            )
            total = sum(n for n, _a, _p in sampled.values())
            handled = {k: (sampling.scale(n, total), a, p) for k, (n, a, p) in sampled.items()}
        backlog_rows = await conn.execute(
            select(*keys, func.count()).select_from(froms).where(*_pending(scope)).group_by(*keys)
        )
        backlog = {(r[0], r[1]): int(r[2]) for r in backlog_rows}
    items = []
    for key in set(handled) | set(backlog):
        count, avg, p90 = handled.get(key, (0, None, None))
        items.append(
            {
                "definitionKey": key[0],
                "nodeKey": key[1],
                "handled": count,
                "avgHandlingMs": ms(avg),
                "p90HandlingMs": ms(p90),
                "backlog": backlog.get(key, 0),
            }
        )
    items.sort(
        key=lambda i: (-i["backlog"], -(i["avgHandlingMs"] or 0), i["definitionKey"], i["nodeKey"])
    )
    return {
        "definitionKey": scope.definition_key,
        "periodDays": days,
        "items": items[:limit],
        "estimated": [] if sampling is None else ["handled", "avgHandlingMs", "p90HandlingMs"],
    }


async def approver_workload(
    db: Database, scope: AnalyticsScope, *, now: datetime, days: int = 30, limit: int = 50
) -> dict[str, Any]:
    froms, _where = scoped_tasks(scope)
    keys = [tasks.c.assignee]
    handled_where = _handled(scope, now, days)
    async with analytics_read(db) as conn:
        sampling = await sampling_for(conn, tasks, select(tasks).where(*handled_where))
        handled = await _handling_by(conn, keys, handled_where, froms, sampling)
        pending_rows = await conn.execute(
            select(tasks.c.assignee, func.count())
            .select_from(froms)
            .where(*_pending(scope))
            .group_by(tasks.c.assignee)
        )
        pending = {(r[0],): int(r[1]) for r in pending_rows}
    items = []
    for key in set(handled) | set(pending):
        count, avg = handled.get(key, (0, None))
        items.append(
            {
                "assignee": key[0],
                "pending": pending.get(key, 0),
                "handled": count,
                "avgHandlingMs": ms(avg),
            }
        )
    items.sort(key=lambda i: (-i["pending"], -i["handled"], i["assignee"]))
    return {
        "definitionKey": scope.definition_key,
        "periodDays": days,
        "items": items[:limit],
        "estimated": [] if sampling is None else ["handled", "avgHandlingMs"],
    }


async def timeouts(
    db: Database, scope: AnalyticsScope, *, now: datetime, limit: int = 100
) -> dict[str, Any]:
    froms, where = scoped_tasks(scope)
    pending = [tasks.c.status == TaskStatus.PENDING, tasks.c.due_at.is_not(None), *where]
    overdue = tasks.c.due_at < now
    soon = (tasks.c.due_at >= now) & (tasks.c.due_at < now + DUE_SOON)
    # the instances list's due soon (engine.deadlines): now < due_at <= now + 4 h
    list_soon = (tasks.c.due_at > now) & (tasks.c.due_at <= now + DEADLINE_DUE_SOON)
    async with analytics_read(db) as conn:
        counts = (
            await conn.execute(
                select(
                    func.count().filter(overdue),
                    func.count().filter(soon),
                    func.count().filter(list_soon),
                    func.count().filter(tasks.c.escalated_at.is_not(None)),
                )
                .select_from(froms)
                .where(*pending)
            )
        ).one()
        rows = await conn.execute(
            select(
                tasks.c.id,
                tasks.c.instance_id,
                tasks.c.definition_key,
                tasks.c.node_key,
                tasks.c.assignee,
                tasks.c.due_at,
                tasks.c.escalated_at,
            )
            .select_from(froms)
            .where(*pending, overdue)
            .order_by(tasks.c.due_at, tasks.c.id)
            .limit(limit)
        )
        overdue_list = [
            {
                "taskId": r.id,
                "instanceId": r.instance_id,
                "definitionKey": r.definition_key,
                "nodeKey": r.node_key,
                "assignee": r.assignee,
                "dueAt": r.due_at,
                "overdueSeconds": round((now - r.due_at).total_seconds(), 3),
                "escalatedAt": r.escalated_at,
            }
            for r in rows
        ]
    return {
        "definitionKey": scope.definition_key,
        "now": now,
        "overdue": int(counts[0]),
        "dueWithin24h": int(counts[1]),
        "dueSoon": int(counts[2]),
        "escalated": int(counts[3]),
        "overdueTasks": overdue_list,
    }
