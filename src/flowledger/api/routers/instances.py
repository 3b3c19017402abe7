"""Instances (SPEC E-2, E-6, E-11, O-1, O-3): start, list with filters and
keyset paging, read one with its tasks, tokens, comments and trace, and the
lifecycle actions — suspend / resume / cancel / return to initiator
(``workflow:engine:operate``), withdraw (the initiator with
``workflow:task:act``, or an operator) and comments (the initiator, or an
operator). Every action is audited (A-2) and answers with the instance
detail as it is after the action."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Depends, Path, Query

from flowledger.api import lookups
from flowledger.api.audit import AuditEntry, audited
from flowledger.api.auth import Caller, CurrentCaller
from flowledger.api.deps import ApiContext, Ctx
from flowledger.api.errors import Forbidden
from flowledger.api.instance_params import SortParam, instance_filter_params, scoped
from flowledger.api.pagination import Cursor, Limit, cursor_for, decode_cursor
from flowledger.api.permissions import (
    ENGINE_OPERATE,
    INSTANCE_MONITOR,
    INSTANCE_START,
    TASK_ACT,
    require,
    require_own,
    require_tenant,
)
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import (
    MAX_ID,
    CommentCreate,
    CommentPublic,
    InstanceCreate,
    InstanceDetail,
    InstancePage,
    InstancePublic,
    ReasonBody,
)
from flowledger.ops.monitor import queries as instance_queries
from flowledger.ops.monitor.filters import InstanceFilter

router = APIRouter(prefix="/instances", tags=["instances"], route_class=GuardedRoute)

InstanceId = Annotated[int, Path(alias="instanceId", ge=1, le=MAX_ID)]
OptionalReason = Annotated[ReasonBody, Body(default_factory=ReasonBody)]
InstanceFilterParams = Annotated[InstanceFilter, Depends(instance_filter_params)]
# reading: monitors see every instance; a caller who acts on tasks, its own
READ = allow(INSTANCE_MONITOR, TASK_ACT)


def _operate(name: str) -> Any:
    """An operator's lifecycle action on an instance (audited when refused)."""
    return allow(ENGINE_OPERATE, audit=Audit(f"instance.{name}", "instance", "instanceId"))


def _own_or_operate(name: str) -> Any:
    """The initiator's own action, or an operator's (audited when refused)."""
    audit = Audit(f"instance.{name}", "instance", "instanceId")
    return allow(TASK_ACT, ENGINE_OPERATE, audit=audit)


async def _detail(ctx: ApiContext, caller: Caller, instance_id: int) -> InstanceDetail:
    return InstanceDetail.from_row(
        await lookups.instance_detail(ctx, caller, instance_id), now=ctx.now()
    )


@router.post(
    "",
    status_code=201,
    response_model=InstanceDetail,
    dependencies=[allow(INSTANCE_START, audit=Audit("instance.start", "instance"))],
)
async def start_instance(body: InstanceCreate, ctx: Ctx, caller: CurrentCaller) -> InstanceDetail:
    """Start an instance of the latest (or the given) version. The initiator
    is the caller unless an operator names someone else."""
    async with audited(ctx, caller, "instance.start", "instance") as entry:
        tenant = body.tenant or caller.default_tenant
        require_tenant(caller, tenant)
        initiator = body.initiator or caller.user_id
        if initiator != caller.user_id:
            require(caller, ENGINE_OPERATE)
        entry.tenant_id = tenant
        entry.detail.update(definitionKey=body.definition_key, version=body.version)
        instance_id = await ctx.engine.start(
            body.definition_key,
            form=body.form,
            initiator=initiator,
            tenant=tenant,
            version=body.version,
            audit=entry,
        )
    return await _detail(ctx, caller, instance_id)


@router.get("", response_model=InstancePage, dependencies=[READ])
async def list_instances(
    ctx: Ctx,
    caller: CurrentCaller,
    flt: InstanceFilterParams,
    sort: Annotated[SortParam, Query(description="Newest first by this time.")] = "created",
    limit: Limit = 50,
    cursor: Cursor = None,
) -> InstancePage:
    """SPEC O-1: instances newest first (by ``sort``; ``finished`` lists only
    finished ones), keyset-paged, under every filter of the monitoring list.
    Monitors see every instance of their tenants; a caller with only
    ``workflow:task:act`` sees the instances it started. Counts per status:
    ``GET /instances/counts`` with the same filters."""
    initiator = None
    if not caller.has(INSTANCE_MONITOR):
        if flt.initiator not in (None, caller.user_id):
            raise Forbidden(
                "listing other people's instances needs " + INSTANCE_MONITOR,
                permission=INSTANCE_MONITOR,
            )
        initiator = caller.user_id
    after = decode_cursor(cursor, (datetime, int))
    async with ctx.read_db.read() as conn:
        rows, next_key = await instance_queries.list_instances(
            conn,
            scoped(flt, caller, initiator=initiator),
            now=ctx.now(),
            sort=sort,
            limit=limit,
            after=None if after is None else (after[0], after[1]),
        )
        states = await instance_queries.deadline_states(
            conn, [r["id"] for r in rows], now=ctx.now()
        )
    return InstancePage(
        items=[InstancePublic.from_row({**r, "deadline": states[r["id"]]}) for r in rows],
        next=cursor_for(next_key),
    )


async def _require_read(ctx: ApiContext, caller: Caller, instance: dict[str, Any]) -> None:
    if caller.has(INSTANCE_MONITOR):
        return
    own = instance["initiator"] == caller.user_id
    if not own and not await lookups.is_participant(ctx, instance["id"], caller.user_id):
        raise Forbidden(
            "reading other people's instances needs " + INSTANCE_MONITOR,
            permission=INSTANCE_MONITOR,
        )


@router.get("/{instanceId}", response_model=InstanceDetail, dependencies=[READ])
async def read_instance(instance_id: InstanceId, ctx: Ctx, caller: CurrentCaller) -> InstanceDetail:
    """SPEC O-3: the instance, its tasks, tokens, comments and engine trace."""
    detail = await lookups.instance_detail(ctx, caller, instance_id)
    await _require_read(ctx, caller, detail)
    return InstanceDetail.from_row(detail, now=ctx.now())


async def _lifecycle(
    ctx: ApiContext,
    caller: Caller,
    instance_id: int,
    name: str,
    reason: str | None,
    call: Callable[[AuditEntry], Awaitable[None]],
    *,
    own_ok: bool = False,
) -> InstanceDetail:
    """One audited lifecycle action: tenant, ownership, engine call (the
    route's declaration checked the permission)."""
    action = f"instance.{name}"
    async with audited(ctx, caller, action, "instance", instance_id, reason=reason) as e:
        instance = await lookups.visible_instance(ctx, caller, instance_id)
        e.tenant_id = instance["tenant_id"]
        if own_ok:
            require_own(caller, instance["initiator"])
        await call(e)
    return await _detail(ctx, caller, instance_id)


@router.post(
    "/{instanceId}/suspend", response_model=InstanceDetail, dependencies=[_operate("suspend")]
)
async def suspend_instance(
    instance_id: InstanceId, body: OptionalReason, ctx: Ctx, caller: CurrentCaller
) -> InstanceDetail:
    """Suspend a running instance; its advancement jobs pause (SPEC L-18)."""

    async def call(entry: AuditEntry) -> None:
        await ctx.engine.suspend(instance_id, actor=caller.user_id, reason=body.reason, audit=entry)

    return await _lifecycle(ctx, caller, instance_id, "suspend", body.reason, call)


@router.post(
    "/{instanceId}/resume", response_model=InstanceDetail, dependencies=[_operate("resume")]
)
async def resume_instance(
    instance_id: InstanceId, body: OptionalReason, ctx: Ctx, caller: CurrentCaller
) -> InstanceDetail:
    """Resume a suspended instance; paused jobs continue with their remaining time."""

    async def call(entry: AuditEntry) -> None:
        await ctx.engine.resume(instance_id, actor=caller.user_id, reason=body.reason, audit=entry)

    return await _lifecycle(ctx, caller, instance_id, "resume", body.reason, call)


@router.post(
    "/{instanceId}/cancel", response_model=InstanceDetail, dependencies=[_operate("cancel")]
)
async def cancel_instance(
    instance_id: InstanceId, body: OptionalReason, ctx: Ctx, caller: CurrentCaller
) -> InstanceDetail:
    """Cancel a live instance (terminal; cleanup of SPEC L-22)."""

    async def call(entry: AuditEntry) -> None:
        await ctx.engine.cancel(instance_id, actor=caller.user_id, reason=body.reason, audit=entry)

    return await _lifecycle(ctx, caller, instance_id, "cancel", body.reason, call)


@router.post(
    "/{instanceId}/withdraw",
    response_model=InstanceDetail,
    dependencies=[_own_or_operate("withdraw")],
)
async def withdraw_instance(
    instance_id: InstanceId, body: OptionalReason, ctx: Ctx, caller: CurrentCaller
) -> InstanceDetail:
    """Withdraw (撤回) an instance: its initiator, or an operator."""

    async def call(entry: AuditEntry) -> None:
        await ctx.engine.withdraw(
            instance_id, actor=caller.user_id, reason=body.reason, audit=entry
        )

    return await _lifecycle(ctx, caller, instance_id, "withdraw", body.reason, call, own_ok=True)


@router.post(
    "/{instanceId}/return", response_model=InstanceDetail, dependencies=[_operate("return")]
)
async def return_instance(
    instance_id: InstanceId, body: OptionalReason, ctx: Ctx, caller: CurrentCaller
) -> InstanceDetail:
    """Return to the initiator (退回发起人): open work stops and the initiator
    gets a resubmission task. 409 ``instance_state`` while that task is
    pending (already returned)."""

    async def call(entry: AuditEntry) -> None:
        await ctx.engine.return_to_initiator(
            instance_id, actor=caller.user_id, reason=body.reason, audit=entry
        )

    return await _lifecycle(ctx, caller, instance_id, "return", body.reason, call)


@router.post(
    "/{instanceId}/comments",
    status_code=201,
    response_model=CommentPublic,
    dependencies=[_own_or_operate("comment")],
)
async def comment_instance(
    instance_id: InstanceId, body: CommentCreate, ctx: Ctx, caller: CurrentCaller
) -> CommentPublic:
    """Add a comment to an instance: its initiator, or an operator."""
    async with audited(ctx, caller, "instance.comment", "instance", instance_id) as entry:
        instance = await lookups.visible_instance(ctx, caller, instance_id)
        entry.tenant_id = instance["tenant_id"]
        require_own(caller, instance["initiator"])
        comment_id = await ctx.engine.comment(
            instance_id, body.body, actor=caller.user_id, audit=entry
        )
    return CommentPublic.from_row(await lookups.comment(ctx, comment_id))
