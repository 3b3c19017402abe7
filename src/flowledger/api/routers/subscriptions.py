"""Event subscriptions (SPEC X-5): CRUD and their recorded hits.

``POST /subscriptions``, ``GET /subscriptions``, ``GET|PATCH|DELETE
/subscriptions/{id}``, ``GET /subscriptions/{id}/hits``. Writes need
``workflow:definition:manage``; reads need that or
``workflow:instance:monitor`` (A-2). Everything is tenant-scoped (a
subscription of a tenant the caller cannot see is 404, A-3) and every write
is audited (``subscription.create|update|delete``; secrets never appear in
the audit).

The secret is write-only: responses say ``hasSecret``. A create without a
``secret`` generates one and returns it **once**, in that create response
(``secret``); a PATCH may set a new one. Deleting is soft: the subscription
disappears (404) and its undelivered webhooks are skipped, its hits stay on
record for the instance diagnostics. Every change is one call of
:mod:`flowledger.events.subscription_changes` (its transaction and audit row).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Self

from fastapi import APIRouter, Path, Query, Response
from pydantic import Field, field_validator

from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.pagination import Cursor, Limit, cursor_for, decode_cursor
from flowledger.api.permissions import DEFINITION_MANAGE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import (
    MAX_ID,
    NO_NUL,
    ApiModel,
    DefinitionKey,
    Name,
    RequestModel,
    TenantId,
    not_null,
)
from flowledger.events import hits, subscription_changes, subscriptions
from flowledger.events.subscription_changes import SubscriptionRequest

router = APIRouter(prefix="/subscriptions", tags=["subscriptions"], route_class=GuardedRoute)


SubscriptionId = Annotated[int, Path(alias="subscriptionId", ge=1, le=MAX_ID)]
EventType = Annotated[str, Field(min_length=1, max_length=64), NO_NUL]
EventTypes = Annotated[
    list[EventType], Field(min_length=1, max_length=subscriptions.MAX_EVENT_TYPES)
]
TargetUrl = Annotated[str, Field(min_length=1, max_length=2048), NO_NUL]
Secret = Annotated[str, Field(min_length=16, max_length=255), NO_NUL]
HitStatus = Literal["pending", "delivered", "failed", "skipped"]


class SubscriptionCreate(RequestModel):
    name: Name
    event_types: EventTypes = Field(
        description="Event types ('task.completed'), families ('task.*') or '*'."
    )
    target_url: TargetUrl
    definition_key: DefinitionKey | None = Field(
        default=None, description="Only events of instances of this definition."
    )
    secret: Secret | None = Field(
        default=None, description="HMAC secret; generated (and returned once) when omitted."
    )
    enabled: bool = True
    tenant: TenantId | None = None


class SubscriptionUpdate(RequestModel):
    """Only the fields given change; ``definitionKey: null`` removes the filter."""

    name: Name | None = None
    event_types: EventTypes | None = None
    target_url: TargetUrl | None = None
    definition_key: DefinitionKey | None = None
    secret: Secret | None = None
    enabled: bool | None = None

    _not_null = field_validator("name", "event_types", "target_url", "secret", "enabled")(not_null)

    def changes(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.model_fields_set}


class SubscriptionPublic(ApiModel):
    id: int
    tenant: str
    name: str
    event_types: list[str]
    definition_key: str | None = None
    target_url: str
    enabled: bool
    has_secret: bool = True
    created_by: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        return cls(
            id=row["id"],
            tenant=row["tenant_id"],
            name=row["name"],
            event_types=list(row["event_types"]),
            definition_key=row["definition_key"],
            target_url=row["target_url"],
            enabled=row["enabled"],
            has_secret=bool(row["secret_encrypted"]),
            created_by=row["created_by"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )


class SubscriptionCreated(SubscriptionPublic):
    """The created subscription; ``secret`` is set only when it was generated,
    and this is the only time it is shown."""

    secret: str | None = None


class SubscriptionPage(ApiModel):
    items: list[SubscriptionPublic]
    next: str | None = None


class HitPublic(ApiModel):
    id: int
    subscription_id: int
    event_id: int
    event_type: str
    instance_id: int | None = None
    job_id: int | None = None
    status: str
    response_status: int | None = None
    last_error: str | None = None
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        return cls(**{name: row[name] for name in cls.model_fields})


class HitPage(ApiModel):
    items: list[HitPublic]
    next: str | None = None


@router.get(
    "", response_model=SubscriptionPage, dependencies=[allow(DEFINITION_MANAGE, INSTANCE_MONITOR)]
)
async def list_subscriptions(
    ctx: Ctx,
    caller: CurrentCaller,
    enabled: bool | None = None,
    definition_key: Annotated[str | None, Query(alias="definitionKey", max_length=64)] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> SubscriptionPage:
    """Subscriptions of the caller's tenants, newest first."""
    after = decode_cursor(cursor, (int,))
    async with ctx.db.read() as conn:
        page = await subscriptions.list_subscriptions(
            conn,
            tenants=caller.tenant_scope,
            enabled=enabled,
            definition_key=definition_key,
            limit=limit,
            after_id=None if after is None else after[0],
        )
    return SubscriptionPage(
        items=[SubscriptionPublic.from_row(r) for r in page.items], next=cursor_for(page.next_key)
    )


@router.post(
    "",
    status_code=201,
    response_model=SubscriptionCreated,
    dependencies=[allow(DEFINITION_MANAGE, audit=Audit("subscription.create", "subscription"))],
)
async def create_subscription(
    body: SubscriptionCreate, ctx: Ctx, caller: CurrentCaller
) -> SubscriptionCreated:
    """Subscribe a URL to events; signed webhooks go to it (docs/webhooks.md)."""
    request = SubscriptionRequest(
        name=body.name,
        event_types=body.event_types,
        target_url=body.target_url,
        definition_key=body.definition_key,
        secret=body.secret,
        enabled=body.enabled,
        tenant=body.tenant,
        given=body.model_dump(by_alias=True, exclude={"tenant"}, exclude_none=True),
    )
    row, generated = await subscription_changes.create_subscription(
        ctx, caller, request, box=ctx.secrets
    )
    public = SubscriptionPublic.from_row(row)
    return SubscriptionCreated(**public.model_dump(), secret=generated)


@router.get(
    "/{subscriptionId}",
    response_model=SubscriptionPublic,
    dependencies=[allow(DEFINITION_MANAGE, INSTANCE_MONITOR)],
)
async def get_subscription(
    subscription_id: SubscriptionId, ctx: Ctx, caller: CurrentCaller
) -> SubscriptionPublic:
    async with ctx.db.read() as conn:
        row = await subscriptions.require_subscription(
            conn, subscription_id, tenants=caller.tenant_scope
        )
    return SubscriptionPublic.from_row(row)


@router.patch(
    "/{subscriptionId}",
    response_model=SubscriptionPublic,
    dependencies=[
        allow(
            DEFINITION_MANAGE, audit=Audit("subscription.update", "subscription", "subscriptionId")
        )
    ],
)
async def update_subscription(
    subscription_id: SubscriptionId, body: SubscriptionUpdate, ctx: Ctx, caller: CurrentCaller
) -> SubscriptionPublic:
    """Change some fields; disabling makes its pending deliveries skip (L-4)."""
    row = await subscription_changes.update_subscription(
        ctx,
        caller,
        subscription_id,
        body.changes(),
        given=body.model_dump(by_alias=True, exclude_unset=True),
        box=ctx.secrets,
    )
    return SubscriptionPublic.from_row(row)


@router.delete(
    "/{subscriptionId}",
    status_code=204,
    response_class=Response,
    dependencies=[
        allow(
            DEFINITION_MANAGE, audit=Audit("subscription.delete", "subscription", "subscriptionId")
        )
    ],
)
async def delete_subscription(
    subscription_id: SubscriptionId, ctx: Ctx, caller: CurrentCaller
) -> Response:
    await subscription_changes.delete_subscription(ctx, caller, subscription_id)
    return Response(status_code=204)


@router.get(
    "/{subscriptionId}/hits",
    response_model=HitPage,
    dependencies=[allow(DEFINITION_MANAGE, INSTANCE_MONITOR)],
)
async def list_hits(
    subscription_id: SubscriptionId,
    ctx: Ctx,
    caller: CurrentCaller,
    status: HitStatus | None = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> HitPage:
    """The events that matched this subscription, newest first, with the
    status of their webhook delivery."""
    after = decode_cursor(cursor, (int,))
    async with ctx.db.read() as conn:
        await subscriptions.require_subscription(conn, subscription_id, tenants=caller.tenant_scope)
        page = await hits.list_hits(
            conn,
            subscription_id,
            status=status,
            limit=limit,
            after_event_id=None if after is None else after[0],
        )
    return HitPage(
        items=[HitPublic.from_row(r) for r in page.items], next=cursor_for(page.next_key)
    )
