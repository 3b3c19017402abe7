"""Definitions (SPEC E-1): deploy a new immutable version, list the latest
version of every key, read one version with its source. Deploying needs
``workflow:definition:manage``; reading needs monitor, manage or start (a
caller who may start instances must be able to see what it can start)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path, Query

from flowledger.api.audit import audited
from flowledger.api.auth import Caller, CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.pagination import Cursor, Limit, cursor_for, decode_cursor
from flowledger.api.permissions import (
    DEFINITION_MANAGE,
    INSTANCE_MONITOR,
    INSTANCE_START,
    require_tenant,
)
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import (
    DefinitionCreate,
    DefinitionPage,
    DefinitionPublic,
    DefinitionVersionPublic,
)
from flowledger.engine import queries
from flowledger.engine.errors import DefinitionNotFound

router = APIRouter(prefix="/definitions", tags=["definitions"], route_class=GuardedRoute)

KeyPath = Annotated[str, Path(min_length=1, max_length=64)]
VersionPath = Annotated[int, Path(ge=1, le=2**31 - 1)]
TenantQuery = Annotated[
    str | None,
    Query(
        pattern=r"^[A-Za-z0-9_.-]{1,64}$",
        description="Tenant of the definition (default: the caller's first tenant).",
    ),
]


# reading needs one of these (a caller who may start must see what it starts)
READ = allow(INSTANCE_MONITOR, DEFINITION_MANAGE, INSTANCE_START)


def _tenant(caller: Caller, tenant: str | None) -> str:
    chosen = tenant or caller.default_tenant
    if not caller.sees(chosen):
        raise DefinitionNotFound("definition not found", field="tenant")
    return chosen


@router.post(
    "",
    status_code=201,
    response_model=DefinitionPublic,
    dependencies=[allow(DEFINITION_MANAGE, audit=Audit("definition.deploy", "definition"))],
)
async def deploy_definition(
    body: DefinitionCreate, ctx: Ctx, caller: CurrentCaller
) -> DefinitionPublic:
    """Validate and deploy a definition as the next version of its key. An
    invalid definition is 422 ``definition_invalid`` listing every problem."""
    async with audited(ctx, caller, "definition.deploy", "definition") as entry:
        tenant = body.tenant or caller.default_tenant
        require_tenant(caller, tenant)
        entry.tenant_id = tenant
        source = body.source if body.source is not None else body.definition
        assert source is not None
        row = await ctx.engine.deploy(source, actor=caller.user_id, tenant=tenant, audit=entry)
    return DefinitionPublic.from_row(row)


@router.get("", response_model=DefinitionPage, dependencies=[READ])
async def list_definitions(
    ctx: Ctx, caller: CurrentCaller, limit: Limit = 50, cursor: Cursor = None
) -> DefinitionPage:
    """The latest version of every definition key in the caller's tenants."""
    after = decode_cursor(cursor, (str, str))
    async with ctx.db.read() as conn:
        page = await queries.list_definitions(
            conn,
            tenants=caller.tenant_scope,
            limit=limit,
            after=None if after is None else (after[0], after[1]),
        )
    return DefinitionPage(
        items=[DefinitionPublic.from_row(r) for r in page.items], next=cursor_for(page.next_key)
    )


@router.get("/{key}/versions", response_model=DefinitionPage, dependencies=[READ])
async def list_definition_versions(
    key: KeyPath, ctx: Ctx, caller: CurrentCaller, tenant: TenantQuery = None
) -> DefinitionPage:
    """Every version of one key, newest first."""
    chosen = _tenant(caller, tenant)
    async with ctx.db.read() as conn:
        rows = await queries.list_definition_versions(conn, key, tenant=chosen)
    if not rows:
        raise DefinitionNotFound(f"definition {key!r} not found", field="key")
    return DefinitionPage(items=[DefinitionPublic.from_row(r) for r in rows], next=None)


@router.get(
    "/{key}/versions/{version}", response_model=DefinitionVersionPublic, dependencies=[READ]
)
async def read_definition_version(
    key: KeyPath,
    version: VersionPath,
    ctx: Ctx,
    caller: CurrentCaller,
    tenant: TenantQuery = None,
) -> DefinitionVersionPublic:
    """One version with its (normalised) source document."""

    chosen = _tenant(caller, tenant)
    async with ctx.db.read() as conn:
        row = await queries.get_definition_version(conn, key, version, tenant=chosen)
    if row is None:
        raise DefinitionNotFound(f"definition {key!r} version {version} not found", field="version")
    return DefinitionVersionPublic.from_row(row)
