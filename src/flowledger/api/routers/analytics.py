"""Analytics panels under ``/api/workflows/analytics`` (SPEC O-14, A-1, A-3):
totals, daily, top-definitions, node-bottlenecks, approver-workload, timeouts
and async-health. Each needs ``workflow:instance:monitor`` (403 otherwise),
sees only the caller's tenants, takes an optional ``definitionKey`` filter and
is never audited (reads). Figures are computed at the engine clock's "now".
The read models live in :mod:`flowledger.ops.analytics.instances` and siblings."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from flowledger.api.analytics_schemas import (
    AnalyticsApproverWorkload,
    AnalyticsAsyncHealth,
    AnalyticsDaily,
    AnalyticsNodeBottlenecks,
    AnalyticsTimeouts,
    AnalyticsTopDefinitions,
    AnalyticsTotals,
)
from flowledger.api.auth import Caller, CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.permissions import INSTANCE_MONITOR
from flowledger.api.route_access import GuardedRoute, allow
from flowledger.ops.analytics import async_work as analytics_async
from flowledger.ops.analytics import instances as analytics
from flowledger.ops.analytics import tasks as analytics_tasks
from flowledger.ops.analytics.sql import AnalyticsScope
from flowledger.ops.analytics.time_zone import resolve_time_zone

# every route here is a read for monitors (SPEC A-2, O-14)
router = APIRouter(
    prefix="/analytics",
    tags=["analytics"],
    route_class=GuardedRoute,
    dependencies=[allow(INSTANCE_MONITOR)],
)


def analytics_scope(
    caller: CurrentCaller,
    definition_key: Annotated[
        str | None,
        Query(alias="definitionKey", min_length=1, max_length=64, description="One definition."),
    ] = None,
) -> AnalyticsScope:
    """The caller's tenants (A-3) and the definition filter."""
    return AnalyticsScope(tenants=_tenants(caller), definition_key=definition_key)


def _tenants(caller: Caller) -> tuple[str, ...] | None:
    scope = caller.tenant_scope
    return None if scope is None else tuple(scope)


Scope = Annotated[AnalyticsScope, Depends(analytics_scope)]
PeriodDays = Annotated[int, Query(ge=1, le=366, description="The period, in days back from now.")]
ItemLimit = Annotated[int, Query(ge=1, le=500)]


@router.get("/totals", response_model=AnalyticsTotals)
async def read_totals(ctx: Ctx, scope: Scope) -> AnalyticsTotals:
    """Instances per status, average duration of finished ones, pending human
    tasks now and starts in the last 7 days."""
    body = await analytics.totals(ctx.read_db, scope, now=ctx.now())
    return AnalyticsTotals.model_validate(body)


@router.get("/daily", response_model=AnalyticsDaily)
async def read_daily(
    ctx: Ctx,
    scope: Scope,
    tz: Annotated[
        str | None,
        Query(max_length=64, description="IANA time zone of the days (default: the server's)."),
    ] = None,
    days: Annotated[int, Query(ge=1, le=92)] = 14,
) -> AnalyticsDaily:
    """Starts and finishes per local day over the last ``days`` (default 14),
    today included, days without any included as zeros."""
    zone = resolve_time_zone(tz, default=ctx.settings.analytics_time_zone)
    body = await analytics.daily(ctx.read_db, scope, now=ctx.now(), zone=zone, days=days)
    return AnalyticsDaily.model_validate(body)


@router.get("/top-definitions", response_model=AnalyticsTopDefinitions)
async def read_top_definitions(
    ctx: Ctx, scope: Scope, days: PeriodDays = 30, limit: ItemLimit = 10
) -> AnalyticsTopDefinitions:
    """Definitions by instances started in the period, largest first, with
    their running / approved / rejected split and average duration."""
    body = await analytics.top_definitions(
        ctx.read_db, scope, now=ctx.now(), days=days, limit=limit
    )
    return AnalyticsTopDefinitions.model_validate(body)


@router.get("/node-bottlenecks", response_model=AnalyticsNodeBottlenecks)
async def read_node_bottlenecks(
    ctx: Ctx, scope: Scope, days: PeriodDays = 30, limit: ItemLimit = 50
) -> AnalyticsNodeBottlenecks:
    """Per human node: tasks handled in the period, average and p90 handling
    time, and the backlog of pending tasks now."""
    body = await analytics_tasks.node_bottlenecks(
        ctx.read_db, scope, now=ctx.now(), days=days, limit=limit
    )
    return AnalyticsNodeBottlenecks.model_validate(body)


@router.get("/approver-workload", response_model=AnalyticsApproverWorkload)
async def read_approver_workload(
    ctx: Ctx, scope: Scope, days: PeriodDays = 30, limit: ItemLimit = 50
) -> AnalyticsApproverWorkload:
    """Per assignee: pending now, handled in the period, average handling time."""
    body = await analytics_tasks.approver_workload(
        ctx.read_db, scope, now=ctx.now(), days=days, limit=limit
    )
    return AnalyticsApproverWorkload.model_validate(body)


@router.get("/timeouts", response_model=AnalyticsTimeouts)
async def read_timeouts(ctx: Ctx, scope: Scope, limit: ItemLimit = 100) -> AnalyticsTimeouts:
    """Overdue pending tasks (count and list), and those due within 24 h."""
    body = await analytics_tasks.timeouts(ctx.read_db, scope, now=ctx.now(), limit=limit)
    return AnalyticsTimeouts.model_validate(body)


@router.get("/async-health", response_model=AnalyticsAsyncHealth)
async def read_async_health(ctx: Ctx, scope: Scope) -> AnalyticsAsyncHealth:
    """Job status distribution per type, webhook deliveries per status and
    subprocess child instances per status."""
    return AnalyticsAsyncHealth.model_validate(
        await analytics_async.async_health(ctx.read_db, scope)
    )
