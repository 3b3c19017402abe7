"""The job and attempt figures of several alert scopes at once (SPEC O-22,
L-23; issue 34 item 3): what :func:`~flowledger.ops.runtime.status.job_figures`
and :func:`~flowledger.ops.runtime.status.attempt_figures` give for each
scope (None: every job; a tuple of tenants), read by one grouped pass per
figure instead of one pass per scope — an evaluator pass over rules of five
scopes read every dead job five times. With no tenant scope at all (the
metrics of the whole engine) the job figures are the status panel's own
statements. Read-only.

Each pass groups its rows by the job's ``tenant_id``; a scope's figure is
the sum over its tenants' groups (every group for None), so every figure
keeps the status panel's definition exactly (the tests compare them):

- running, stuck (lease missing or expired, or the deadline reached),
  backlog (pending with ``run_at <= now``) and the oldest due ``run_at``:
  the live jobs (``ix_workflow_jobs_live_tenant``, index-only);
- dead jobs (``ix_workflow_jobs_dead_tenant``, index-only);
- the attempts started in the last hour (``now - 1 h <= started_at <=
  now``) and the failed ones: a range of
  ``ix_workflow_job_executions_started``, each joined to its job by
  primary key (only when some scope names tenants).

``lastClaimAt`` and ``avgDurationMs1h`` are the status panel's alone (no
alert metric uses them).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import and_, case, func, null, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.runtime.status import RATE_WINDOW, job_figures
from flowledger.states import AttemptStatus, JobStatus

Scope = tuple[str, ...] | None


def _in_scope(tenant: str | None, scope: Scope) -> bool:
    return scope is None or tenant in scope


def _sum(groups: dict[str | None, tuple[Any, ...]], scope: Scope, index: int) -> int:
    return sum(int(row[index] or 0) for tenant, row in groups.items() if _in_scope(tenant, scope))


async def job_figures_of(
    conn: AsyncConnection, now: datetime, scopes: Sequence[Scope]
) -> dict[Scope, dict[str, Any]]:
    """``inFlight``, ``stuck``, ``backlog``, ``oldestQueuedSeconds`` and
    ``dead`` of each scope. Every job only (no tenant scope): the status
    panel's own statements, each over its own partial index, cost less than
    one pass grouping every live and dead job by tenant."""
    if all(scope is None for scope in scopes):
        figures = dict(await job_figures(conn, now, None))
        del figures["lastClaimAt"]
        return {None: figures}
    stuck = or_(
        jobs.c.lease_until.is_(None), jobs.c.lease_until < now, jobs.c.execution_deadline <= now
    )
    running = jobs.c.status == JobStatus.RUNNING
    due = and_(jobs.c.status == JobStatus.PENDING, jobs.c.run_at <= now)
    live = await conn.execute(
        select(
            jobs.c.tenant_id,
            func.count().filter(running),
            func.count().filter(and_(running, stuck)),
            func.count().filter(due),
            func.min(case((due, jobs.c.run_at))),
        )
        .where(jobs.c.status.in_([JobStatus.PENDING, JobStatus.RUNNING]))
        .group_by(jobs.c.tenant_id)
    )
    live_groups = {row[0]: tuple(row[1:]) for row in live}
    dead = await conn.execute(
        select(jobs.c.tenant_id, func.count())
        .where(jobs.c.status == JobStatus.DEAD)
        .group_by(jobs.c.tenant_id)
    )
    dead_groups = {row[0]: tuple(row[1:]) for row in dead}
    found: dict[Scope, dict[str, Any]] = {}
    for scope in dict.fromkeys(scopes):
        oldest = min(
            (
                row[3]
                for tenant, row in live_groups.items()
                if row[3] is not None and _in_scope(tenant, scope)
            ),
            default=None,
        )
        found[scope] = {
            "inFlight": _sum(live_groups, scope, 0),
            "stuck": _sum(live_groups, scope, 1),
            "backlog": _sum(live_groups, scope, 2),
            "oldestQueuedSeconds": None
            if oldest is None
            else round((now - oldest).total_seconds(), 3),
            "dead": _sum(dead_groups, scope, 0),
        }
    return found


async def attempt_figures_of(
    conn: AsyncConnection, now: datetime, scopes: Sequence[Scope]
) -> dict[Scope, dict[str, Any]]:
    """``failureRate1h``, ``attempts1h`` and ``failedAttempts1h`` of each scope."""
    by_tenant = any(scope is not None for scope in scopes)
    tenant = jobs.c.tenant_id if by_tenant else null()
    failed = case((executions.c.status == AttemptStatus.FAILED, 1), else_=0)
    query = select(
        tenant,
        func.count(),
        func.coalesce(func.sum(failed), 0),
    ).where(executions.c.started_at >= now - RATE_WINDOW, executions.c.started_at <= now)
    if by_tenant:  # the hour's attempts, joined to their jobs by primary key (an
        # attempt without its job counts only for every tenant, as unjoined)
        query = query.outerjoin_from(executions, jobs, jobs.c.id == executions.c.job_id).group_by(
            jobs.c.tenant_id
        )
    groups = {row[0]: tuple(row[1:]) for row in await conn.execute(query) if row[1]}
    found: dict[Scope, dict[str, Any]] = {}
    for scope in dict.fromkeys(scopes):
        attempts, fails = _sum(groups, scope, 0), _sum(groups, scope, 1)
        found[scope] = {
            "failureRate1h": fails / attempts if attempts else None,
            "attempts1h": attempts,
            "failedAttempts1h": fails,
        }
    return found
