"""Schedules (SPEC E-9): list, create, turn off and on, and launch on
demand. Creating, changing and launching need ``workflow:definition:manage``
(A-2); listing needs manage or monitor. A manual launch answers 202 with the
``schedule_launch`` job that will start the instance (a worker runs it).
``PATCH /schedules/{id}`` ``{"enabled": false}`` stops the rule's launches
(one it had already planned starts nothing); ``true`` resumes it from its
next fire time after now, without making up the ones missed."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from flowledger.api import lookups
from flowledger.api.audit import audited
from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.pagination import Cursor, Limit, cursor_for, decode_cursor
from flowledger.api.permissions import (
    DEFINITION_MANAGE,
    ENGINE_OPERATE,
    INSTANCE_MONITOR,
    require,
    require_tenant,
)
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import (
    MAX_ID,
    ScheduleCreate,
    ScheduleLaunchPublic,
    SchedulePage,
    SchedulePublic,
    ScheduleUpdate,
)
from flowledger.engine import queries

router = APIRouter(prefix="/schedules", tags=["schedules"], route_class=GuardedRoute)

ScheduleId = Annotated[int, Path(alias="scheduleId", ge=1, le=MAX_ID)]


@router.get(
    "", response_model=SchedulePage, dependencies=[allow(DEFINITION_MANAGE, INSTANCE_MONITOR)]
)
async def list_schedules(
    ctx: Ctx,
    caller: CurrentCaller,
    definition_key: Annotated[str | None, Query(alias="definitionKey", max_length=64)] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> SchedulePage:
    """Schedules of the caller's tenants, newest first."""
    after = decode_cursor(cursor, (int,))
    async with ctx.db.read() as conn:
        page = await queries.list_schedules(
            conn,
            tenants=caller.tenant_scope,
            definition_key=definition_key,
            limit=limit,
            after=None if after is None else (after[0],),
        )
    return SchedulePage(
        items=[SchedulePublic.from_row(r) for r in page.items], next=cursor_for(page.next_key)
    )


@router.post(
    "",
    status_code=201,
    response_model=SchedulePublic,
    dependencies=[allow(DEFINITION_MANAGE, audit=Audit("schedule.create", "schedule"))],
)
async def create_schedule(body: ScheduleCreate, ctx: Ctx, caller: CurrentCaller) -> SchedulePublic:
    """A cron rule that starts instances of a definition (its latest version
    at each launch) with the given form, as the given initiator (the caller
    by default; naming someone else needs ``workflow:engine:operate``)."""
    async with audited(ctx, caller, "schedule.create", "schedule") as entry:
        tenant = body.tenant or caller.default_tenant
        require_tenant(caller, tenant)
        initiator = body.initiator or caller.user_id
        if initiator != caller.user_id:
            require(caller, ENGINE_OPERATE)
        entry.tenant_id = tenant
        entry.detail.update(definitionKey=body.definition_key, cron=body.cron)
        schedule_id = await ctx.engine.create_schedule(
            definition_key=body.definition_key,
            cron=body.cron,
            form=body.form,
            initiator=initiator,
            name=body.name,
            timezone=body.timezone,
            tenant=tenant,
            audit=entry,
        )
    return SchedulePublic.from_row(await lookups.visible_schedule(ctx, caller, schedule_id))


@router.patch(
    "/{scheduleId}",
    response_model=SchedulePublic,
    dependencies=[
        allow(DEFINITION_MANAGE, audit=Audit("schedule.update", "schedule", "scheduleId"))
    ],
)
async def update_schedule(
    schedule_id: ScheduleId, body: ScheduleUpdate, ctx: Ctx, caller: CurrentCaller
) -> SchedulePublic:
    """Turn the schedule off or on (see the module docstring); the schedule after."""
    async with audited(ctx, caller, "schedule.update", "schedule", schedule_id) as entry:
        row = await ctx.engine.set_schedule_enabled(
            schedule_id, body.enabled, tenants=caller.tenant_scope, audit=entry
        )
    return SchedulePublic.from_row(row)


@router.post(
    "/{scheduleId}/launch",
    status_code=202,
    response_model=ScheduleLaunchPublic,
    dependencies=[
        allow(DEFINITION_MANAGE, audit=Audit("schedule.launch", "schedule", "scheduleId"))
    ],
)
async def launch_schedule(
    schedule_id: ScheduleId, ctx: Ctx, caller: CurrentCaller
) -> ScheduleLaunchPublic:
    """Launch a schedule now ("manual launch"): enqueues a ``schedule_launch`` job."""
    async with audited(ctx, caller, "schedule.launch", "schedule", schedule_id) as entry:
        schedule = await lookups.visible_schedule(ctx, caller, schedule_id)
        entry.tenant_id = schedule["tenant_id"]
        job_id = await ctx.engine.launch_schedule(
            schedule_id, tenants=caller.tenant_scope, audit=entry
        )
    return ScheduleLaunchPublic(id=job_id, job_id=job_id, schedule_id=schedule_id)
