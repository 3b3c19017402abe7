"""Connectors (SPEC X-3): create, list, read, update, delete, and the call
audit; secrets are write-only.

``POST /connectors``, ``GET /connectors``, ``GET|PATCH|DELETE
/connectors/{id}``, ``GET /connectors/{id}/calls``. Writes need
``workflow:definition:manage``; reads need that or
``workflow:instance:monitor`` (A-2). Everything is tenant-scoped: a
connector of a tenant the caller cannot see is 404 (A-3). Every write is
audited (``connector.create|update|delete``) with the names of the changed
settings, never their secret values.

The credential (``secret``: bearer token, basic password, API key or HMAC
key) is stored encrypted and never returned: responses say ``hasSecret``.
A PATCH changes only the fields it gives; ``secret`` absent or null keeps
the stored one; ``rateLimit: null`` removes the rate limit; changing
``authKind`` needs the new kind's secret (``authKind: none`` drops it). The
key and the tenant are fixed at creation (definitions name the key).
Deleting is immediate; the call audit rows stay on record. Validation
errors are 422 naming the field (``connector_invalid`` or
``validation_error``); a taken key is 409 ``connector_key_taken``. Every change is one call of
:mod:`flowledger.events.connector_changes` (its transaction and audit row).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Self

from fastapi import APIRouter, Path, Response
from pydantic import AfterValidator, Field, SecretStr, model_validator

from flowledger.api.auth import Caller, CurrentCaller
from flowledger.api.deps import ApiContext, Ctx
from flowledger.api.pagination import Cursor, Limit, cursor_for, decode_cursor
from flowledger.api.permissions import DEFINITION_MANAGE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import MAX_ID, NO_NUL, ApiModel, Name, RequestModel, TenantId, no_nul
from flowledger.events import connector_changes as changes
from flowledger.outbound import connector_config as config
from flowledger.outbound import connector_store as store

router = APIRouter(prefix="/connectors", tags=["connectors"], route_class=GuardedRoute)

ConnectorId = Annotated[int, Path(alias="connectorId", ge=1, le=MAX_ID)]


def _no_nul_secret(value: SecretStr) -> SecretStr:
    no_nul(value.get_secret_value())
    return value


Key = Annotated[str, Field(pattern=config.KEY_PATTERN)]
BaseUrl = Annotated[str, Field(min_length=1, max_length=config.BASE_URL_MAX), NO_NUL]
Username = Annotated[str, Field(min_length=1, max_length=config.USERNAME_MAX), NO_NUL]
HeaderName = Annotated[str, Field(pattern=config.HEADER_NAME_PATTERN)]
Secret = Annotated[
    SecretStr,
    Field(min_length=1, max_length=config.SECRET_MAX),
    AfterValidator(_no_nul_secret),
]
AuthKind = Literal["none", "bearer", "basic", "api_key", "hmac"]
Headers = Annotated[dict[str, str], Field(max_length=config.DEFAULT_HEADERS_MAX)]


class ConnectorRateLimitBody(RequestModel):
    requests_per_second: float = Field(gt=0, le=config.MAX_RPS)
    burst: int | None = Field(
        default=None, ge=1, le=config.MAX_BURST, description="Default: ceil(requestsPerSecond)."
    )

    def value(self) -> config.RateLimit:
        return config.RateLimit(self.requests_per_second, self.burst or 0)


class ConnectorBreakerBody(RequestModel):
    failure_threshold: int = Field(default=5, ge=1, le=config.MAX_THRESHOLD)
    reset_timeout_s: float = Field(default=30.0, ge=config.MIN_RESET_S, le=config.MAX_RESET_S)

    def value(self) -> config.BreakerSettings:
        return config.BreakerSettings(self.failure_threshold, self.reset_timeout_s)


class ConnectorCreate(RequestModel):
    key: Key = Field(description="Unique in the tenant; definitions name it as connectorId.")
    name: Name
    base_url: BaseUrl = Field(description="http(s) URL; a path prefix is allowed.")
    auth_kind: AuthKind = "none"
    username: Username | None = Field(default=None, description="authKind basic.")
    header_name: HeaderName | None = Field(default=None, description="authKind api_key.")
    secret: Secret | None = Field(
        default=None, description="Token, password, API key or HMAC key; never returned."
    )
    rate_limit: ConnectorRateLimitBody | None = None
    circuit_breaker: ConnectorBreakerBody = Field(default_factory=ConnectorBreakerBody)
    default_headers: Headers = Field(default_factory=dict)
    enabled: bool = True
    tenant: TenantId | None = None

    def draft(self) -> config.ConnectorDraft:
        return config.ConnectorDraft(
            key=self.key,
            name=self.name,
            base_url=self.base_url,
            auth_kind=self.auth_kind,
            username=self.username,
            header_name=self.header_name,
            secret=None if self.secret is None else self.secret.get_secret_value(),
            rate_limit=None if self.rate_limit is None else self.rate_limit.value(),
            circuit_breaker=self.circuit_breaker.value(),
            default_headers=self.default_headers,
            enabled=self.enabled,
        )


_NULLABLE = frozenset({"username", "header_name", "secret", "rate_limit"})


class ConnectorUpdate(RequestModel):
    """Only the fields given change (see the module docstring)."""

    name: Name | None = None
    base_url: BaseUrl | None = None
    auth_kind: AuthKind | None = None
    username: Username | None = None
    header_name: HeaderName | None = None
    secret: Secret | None = None
    rate_limit: ConnectorRateLimitBody | None = None
    circuit_breaker: ConnectorBreakerBody | None = None
    default_headers: Headers | None = None
    enabled: bool | None = None

    @model_validator(mode="after")
    def _no_null_for_required(self) -> Self:
        for name in self.model_fields_set - _NULLABLE:
            if getattr(self, name) is None:
                alias = type(self).model_fields[name].alias or name
                raise ValueError(f"{alias} cannot be null")
        return self

    def changes(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for name in self.model_fields_set:
            value = getattr(self, name)
            if isinstance(value, SecretStr):
                value = value.get_secret_value()
            elif isinstance(value, ConnectorRateLimitBody | ConnectorBreakerBody):
                value = value.value()
            out[name] = value
        return out

    def changed_fields(self) -> list[str]:
        fields = type(self).model_fields
        return sorted(fields[name].alias or name for name in self.model_fields_set)


class ConnectorRateLimitPublic(ApiModel):
    requests_per_second: float
    burst: int


class ConnectorBreakerPublic(ApiModel):
    failure_threshold: int
    reset_timeout_s: float


class ConnectorPublic(ApiModel):
    id: int
    key: str
    tenant: str
    name: str
    base_url: str
    auth_kind: str
    username: str | None = None
    header_name: str | None = None
    has_secret: bool
    rate_limit: ConnectorRateLimitPublic | None = None
    circuit_breaker: ConnectorBreakerPublic
    default_headers: dict[str, str]
    enabled: bool
    created_by: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, connector: store.Connector) -> Self:
        limit, breaker = connector.rate_limit, connector.circuit_breaker
        return cls(
            id=connector.id,
            key=connector.key,
            tenant=connector.tenant_id,
            name=connector.name,
            base_url=connector.base_url,
            auth_kind=connector.auth_kind,
            username=connector.username,
            header_name=connector.header_name,
            has_secret=connector.has_secret,
            rate_limit=None
            if limit is None
            else ConnectorRateLimitPublic(
                requests_per_second=limit.requests_per_second, burst=limit.burst
            ),
            circuit_breaker=ConnectorBreakerPublic(
                failure_threshold=breaker.failure_threshold,
                reset_timeout_s=breaker.reset_timeout_s,
            ),
            default_headers=connector.default_headers,
            enabled=connector.enabled,
            created_by=connector.created_by,
            created_at=connector.created_at,
            updated_at=connector.updated_at,
        )


class ConnectorPage(ApiModel):
    items: list[ConnectorPublic]
    next: str | None = None


class ConnectorCallPublic(ApiModel):
    id: int
    connector_id: int
    connector_key: str
    job_id: int | None = None
    instance_id: int | None = None
    method: str
    path: str
    status: int | None = None
    outcome: str = Field(description="'ok' or the error code of the call.")
    duration_ms: int
    created_at: datetime

    @classmethod
    def of(cls, call: store.ConnectorCall) -> Self:
        return cls(
            id=call.id,
            connector_id=call.connector_id,
            connector_key=call.connector_key,
            job_id=call.job_id,
            instance_id=call.instance_id,
            method=call.method,
            path=call.path,
            status=call.status,
            outcome=call.outcome,
            duration_ms=call.duration_ms,
            created_at=call.created_at,
        )


class ConnectorCallPage(ApiModel):
    items: list[ConnectorCallPublic]
    next: str | None = None


async def _visible(ctx: ApiContext, caller: Caller, connector_id: int) -> store.Connector:
    async with ctx.db.read() as conn:
        connector = await store.get_connector(conn, connector_id, tenants=caller.tenant_scope)
    if connector is None:
        raise changes.not_found(connector_id)
    return connector


@router.get(
    "", response_model=ConnectorPage, dependencies=[allow(DEFINITION_MANAGE, INSTANCE_MONITOR)]
)
async def list_connectors(
    ctx: Ctx, caller: CurrentCaller, limit: Limit = 50, cursor: Cursor = None
) -> ConnectorPage:
    """Connectors of the caller's tenants, oldest first."""
    after = decode_cursor(cursor, (int,))
    async with ctx.db.read() as conn:
        page = await store.list_connectors(
            conn,
            tenants=caller.tenant_scope,
            after_id=None if after is None else after[0],
            limit=limit,
        )
    key = None if page.next_after is None else [page.next_after]
    return ConnectorPage(items=[ConnectorPublic.of(c) for c in page.items], next=cursor_for(key))


@router.post(
    "",
    status_code=201,
    response_model=ConnectorPublic,
    dependencies=[allow(DEFINITION_MANAGE, audit=Audit("connector.create", "connector"))],
)
async def create_connector(
    body: ConnectorCreate, ctx: Ctx, caller: CurrentCaller
) -> ConnectorPublic:
    """A new connector in the given tenant (default: the caller's first)."""
    connector = await changes.create_connector(
        ctx, caller, body.draft(), tenant=body.tenant, box=ctx.secrets
    )
    return ConnectorPublic.of(connector)


@router.get(
    "/{connectorId}",
    response_model=ConnectorPublic,
    dependencies=[allow(DEFINITION_MANAGE, INSTANCE_MONITOR)],
)
async def read_connector(
    connector_id: ConnectorId, ctx: Ctx, caller: CurrentCaller
) -> ConnectorPublic:
    return ConnectorPublic.of(await _visible(ctx, caller, connector_id))


@router.patch(
    "/{connectorId}",
    response_model=ConnectorPublic,
    dependencies=[
        allow(DEFINITION_MANAGE, audit=Audit("connector.update", "connector", "connectorId"))
    ],
)
async def update_connector(
    connector_id: ConnectorId, body: ConnectorUpdate, ctx: Ctx, caller: CurrentCaller
) -> ConnectorPublic:
    """Change the given settings of a connector."""
    connector = await changes.update_connector(
        ctx, caller, connector_id, body.changes(), changed=body.changed_fields(), box=ctx.secrets
    )
    return ConnectorPublic.of(connector)


@router.delete(
    "/{connectorId}",
    status_code=204,
    response_class=Response,
    dependencies=[
        allow(DEFINITION_MANAGE, audit=Audit("connector.delete", "connector", "connectorId"))
    ],
)
async def delete_connector(connector_id: ConnectorId, ctx: Ctx, caller: CurrentCaller) -> Response:
    """Delete a connector (its call audit stays)."""
    await changes.delete_connector(ctx, caller, connector_id)
    return Response(status_code=204)


@router.get(
    "/{connectorId}/calls",
    response_model=ConnectorCallPage,
    dependencies=[allow(DEFINITION_MANAGE, INSTANCE_MONITOR)],
)
async def list_connector_calls(
    connector_id: ConnectorId,
    ctx: Ctx,
    caller: CurrentCaller,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> ConnectorCallPage:
    """The connector's call audit, newest first."""
    after = decode_cursor(cursor, (int,))
    await _visible(ctx, caller, connector_id)
    async with ctx.db.read() as conn:
        page = await store.list_calls(
            conn, connector_id, after_id=None if after is None else after[0], limit=limit
        )
    key = None if page.next_after is None else [page.next_after]
    return ConnectorCallPage(
        items=[ConnectorCallPublic.of(c) for c in page.items], next=cursor_for(key)
    )
