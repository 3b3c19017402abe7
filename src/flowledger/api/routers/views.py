"""Saved views under ``/api/workflows/views`` (SPEC O-1): list, read,
create, change and delete a named filter set of the caller for one scope.

A view is the caller's own; they may share it with its tenant. Another
user's private view — or a view of a tenant the caller cannot see — is 404.
Only the owner changes or deletes a view (someone else's shared view: 403).
The filters are validated against the scope's filter model
(:mod:`flowledger.api.view_filters`): 422 ``filters_invalid`` naming
``filters.<key>``.

Permissions: the scopes ``instances``, ``jobs`` and ``health`` are monitoring
lists and need ``workflow:instance:monitor``; ``tasks`` needs
``workflow:task:act`` or the monitor permission. Listing without a scope
returns the views of every scope the caller may use. Mutations are audited.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query, Response

from flowledger.api.audit import audited
from flowledger.api.auth import Caller, CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.errors import Forbidden
from flowledger.api.monitor_schemas import ViewCreate, ViewList, ViewPublic, ViewScope, ViewUpdate
from flowledger.api.permissions import (
    INSTANCE_MONITOR,
    TASK_ACT,
    require,
    require_any,
    require_tenant,
)
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import MAX_ID
from flowledger.api.view_filters import validate_filters
from flowledger.db.monitor_schema import VIEW_SCOPES
from flowledger.ops.monitor import saved_views
from flowledger.ops.monitor.saved_views import NotViewOwner

router = APIRouter(prefix="/views", tags=["views"], route_class=GuardedRoute)
# a view belongs to a list: the task list (act or monitor) or a monitor's list;
# the scope of the view itself is checked once it is known (_require_scope)
READ = allow(INSTANCE_MONITOR, TASK_ACT)


def _change(action: str, target_param: str | None = None) -> Any:
    """A change of a saved view (audited when refused)."""
    return allow(INSTANCE_MONITOR, TASK_ACT, audit=Audit(action, "view", target_param))


ViewId = Annotated[int, Path(alias="viewId", ge=1, le=MAX_ID)]


def _may_use(caller: Caller, scope: str) -> bool:
    if scope == "tasks":
        return caller.has(TASK_ACT) or caller.has(INSTANCE_MONITOR)
    return caller.has(INSTANCE_MONITOR)


def _require_scope(caller: Caller, scope: str) -> None:
    if scope == "tasks":
        require_any(caller, TASK_ACT, INSTANCE_MONITOR)
    else:
        require(caller, INSTANCE_MONITOR)


def _tenants(caller: Caller) -> list[str] | None:
    return caller.tenant_scope


def _owner_only(exc: NotViewOwner) -> Forbidden:
    return Forbidden(exc.message + "; only its owner may change it", permission="owner")


@router.get("", response_model=ViewList, dependencies=[READ])
async def list_views(
    ctx: Ctx,
    caller: CurrentCaller,
    scope: Annotated[ViewScope | None, Query(description="Only views of this scope.")] = None,
) -> ViewList:
    """The caller's own views and the views shared in their tenants."""
    if scope is not None:
        _require_scope(caller, scope)
        scopes: list[str] = [scope]
    else:
        scopes = [s for s in VIEW_SCOPES if _may_use(caller, s)]
    rows = await saved_views.list_views(
        ctx.db, user=caller.user_id, tenants=_tenants(caller), scopes=scopes
    )
    return ViewList(items=[ViewPublic.from_row(r) for r in rows])


@router.get("/{viewId}", response_model=ViewPublic, dependencies=[READ])
async def read_view(view_id: ViewId, ctx: Ctx, caller: CurrentCaller) -> ViewPublic:
    row = await saved_views.get_view(ctx.db, view_id, user=caller.user_id, tenants=_tenants(caller))
    _require_scope(caller, row["scope"])
    return ViewPublic.from_row(row)


@router.post("", status_code=201, response_model=ViewPublic, dependencies=[_change("view.create")])
async def create_view(body: ViewCreate, ctx: Ctx, caller: CurrentCaller) -> ViewPublic:
    """Save a view; ``isDefault`` makes it the caller's default for the scope
    (the previous default stops being one, in the same transaction)."""
    async with audited(ctx, caller, "view.create", "view") as entry:
        _require_scope(caller, body.scope)
        tenant = body.tenant or caller.default_tenant
        require_tenant(caller, tenant)
        entry.tenant_id = tenant
        entry.detail.update(scope=body.scope, name=body.name)
        filters = validate_filters(body.scope, body.filters)
        row = await saved_views.create_view(
            ctx.db,
            tenant=tenant,
            owner=caller.user_id,
            scope=body.scope,
            name=body.name,
            filters=filters,
            shared=body.shared,
            is_default=body.is_default,
            now=ctx.now(),
            audit=entry,
        )
    return ViewPublic.from_row(row)


@router.patch(
    "/{viewId}", response_model=ViewPublic, dependencies=[_change("view.update", "viewId")]
)
async def update_view(
    view_id: ViewId, body: ViewUpdate, ctx: Ctx, caller: CurrentCaller
) -> ViewPublic:
    """Rename, re-filter, share / unshare or make default (owner only)."""
    async with audited(ctx, caller, "view.update", "view", view_id) as entry:
        current = await saved_views.get_view(
            ctx.db, view_id, user=caller.user_id, tenants=_tenants(caller)
        )
        entry.tenant_id = current["tenant_id"]
        _require_scope(caller, current["scope"])
        if current["owner"] != caller.user_id:
            raise _owner_only(NotViewOwner(f"view {view_id} belongs to {current['owner']}"))
        changes: dict[str, Any] = {}
        if body.name is not None:
            changes["name"] = body.name
        if body.filters is not None:
            changes["filters"] = validate_filters(current["scope"], body.filters)
        if body.shared is not None:
            changes["shared"] = body.shared
        if body.is_default is not None:
            changes["is_default"] = body.is_default
        entry.detail["fields"] = sorted(changes)
        try:
            row = await saved_views.update_view(
                ctx.db,
                view_id,
                user=caller.user_id,
                tenants=_tenants(caller),
                changes=changes,
                now=ctx.now(),
                audit=entry,
            )
        except NotViewOwner as exc:
            raise _owner_only(exc) from None
    return ViewPublic.from_row(row)


@router.delete("/{viewId}", status_code=204, dependencies=[_change("view.delete", "viewId")])
async def delete_view(view_id: ViewId, ctx: Ctx, caller: CurrentCaller) -> Response:
    """Delete a view (owner only)."""
    async with audited(ctx, caller, "view.delete", "view", view_id) as entry:
        try:
            await saved_views.delete_view(
                ctx.db,
                view_id,
                user=caller.user_id,
                tenants=_tenants(caller),
                now=ctx.now(),
                audit=entry,
            )
        except NotViewOwner as exc:
            raise _owner_only(exc) from None
    return Response(status_code=204)
