"""Alerting under ``/api/workflows/engine/alerts`` (SPEC O-22, A-2, A-3):
rules (``GET|POST /rules``, ``GET|PATCH|DELETE /rules/{ruleId}``), events
(``GET /events``), silences (``GET|POST /silences``, ``DELETE
/silences/{silenceId}``, ``POST /silences/{silenceId}/expire``) and the
metrics' current values (``GET /metrics``).

Mutations need ``workflow:engine:operate`` and are audited
(``alert_rule.create|update|delete``, ``alert_silence.create|expire|delete``;
webhook secrets never appear in the audit); reads need
``workflow:instance:monitor``. Rules, events and silences of a tenant the
caller cannot see are 404; those of the whole engine (no tenant) are seen
and changed only by callers who see every tenant. The logic lives in
:mod:`flowledger.ops.alerts`; every change is one call of
:mod:`flowledger.ops.alerts.changes`, which owns its transaction and audit
row.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query, Response

from flowledger.api.alert_schemas import (
    EventPage,
    EventPublic,
    MetricValue,
    MetricValues,
    RuleCreate,
    RuleCreated,
    RulePage,
    RulePublic,
    RuleUpdate,
    SilenceCreate,
    SilencePage,
    SilencePublic,
)
from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.pagination import Cursor, Limit, cursor_for, decode_cursor
from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import MAX_ID
from flowledger.ops.alerts import changes, queries, rules, silences
from flowledger.ops.alerts.changes import RuleRequest, SilenceRequest, default_scope, scope

router = APIRouter(prefix="/engine/alerts", tags=["alerts"], route_class=GuardedRoute)

RuleId = Annotated[int, Path(alias="ruleId", ge=1, le=MAX_ID)]
SilenceId = Annotated[int, Path(alias="silenceId", ge=1, le=MAX_ID)]


def _secret_free(values: dict[str, Any]) -> dict[str, Any]:
    """The audit detail of a body: webhook secrets replaced by a flag."""
    channels = values.get("channels")
    if not isinstance(channels, dict):
        return values
    webhook = channels.get("webhook")
    if isinstance(webhook, dict) and "secret" in webhook:
        webhook = {k: v for k, v in webhook.items() if k != "secret"} | {"secretChanged": True}
        values = {**values, "channels": {**channels, "webhook": webhook}}
    return values


# ------------------------------------------------------------------- rules


@router.get("/rules", response_model=RulePage, dependencies=[allow(INSTANCE_MONITOR)])
async def list_rules(
    ctx: Ctx,
    caller: CurrentCaller,
    enabled: bool | None = None,
    metric: Annotated[str | None, Query(max_length=64)] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> RulePage:
    """Rules of the caller's tenants, newest first."""
    after = decode_cursor(cursor, (int,))
    async with ctx.db.read() as conn:
        items, key = await rules.list_rules(
            conn,
            tenants=caller.tenant_scope,
            enabled=enabled,
            metric=metric,
            limit=limit,
            after_id=None if after is None else after[0],
        )
    return RulePage(
        items=[RulePublic.from_row(r) for r in items],
        next=cursor_for(None if key is None else [key]),
    )


@router.post(
    "/rules",
    status_code=201,
    response_model=RuleCreated,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("alert_rule.create", "alert_rule"))],
)
async def create_rule(body: RuleCreate, ctx: Ctx, caller: CurrentCaller) -> RuleCreated:
    """A threshold rule; a webhook without a secret gets one, returned once."""
    webhook = body.channels.webhook
    request = RuleRequest(
        name=body.name,
        metric=body.metric,
        comparison=body.comparison,
        threshold=body.threshold,
        for_=body.for_ if "for_" in body.model_fields_set else None,
        for_seconds=body.for_seconds,
        severity=body.severity,
        email_to=body.channels.email,
        webhook_url=None if webhook is None else webhook.url,
        webhook_secret=None if webhook is None else webhook.secret,
        in_app_users=body.channels.in_app,
        enabled=body.enabled,
    )
    row, generated = await changes.create_rule(
        ctx,
        caller,
        request,
        tenant=body.tenant if "tenant" in body.model_fields_set else default_scope(caller),
        shown=_secret_free(body.model_dump(by_alias=True, exclude={"tenant"}, mode="json")),
        box=ctx.secrets,
    )
    public = RulePublic.from_row(row)
    return RuleCreated(**public.model_dump(), webhook_secret=generated)


@router.get("/rules/{ruleId}", response_model=RulePublic, dependencies=[allow(INSTANCE_MONITOR)])
async def get_rule(rule_id: RuleId, ctx: Ctx, caller: CurrentCaller) -> RulePublic:
    async with ctx.db.read() as conn:
        row = await rules.require_rule(conn, rule_id, tenants=caller.tenant_scope)
    return RulePublic.from_row(row)


def _changes(body: RuleUpdate) -> dict[str, Any]:
    """The changed fields but the duration, in :class:`RuleFields` names."""
    changes: dict[str, Any] = {}
    for name in body.model_fields_set - {"channels", "for_", "for_seconds"}:
        changes[name] = getattr(body, name)
    channels = body.channels
    if channels is not None:
        given = channels.model_fields_set
        if "email" in given:
            changes["email_to"] = channels.email or []
        if "in_app" in given:
            changes["in_app_users"] = channels.in_app or []
        if "webhook" in given:
            changes["webhook_url"] = None if channels.webhook is None else channels.webhook.url
            if channels.webhook is not None and channels.webhook.secret is not None:
                changes["webhook_secret"] = channels.webhook.secret
    return changes


@router.patch(
    "/rules/{ruleId}",
    response_model=RulePublic,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("alert_rule.update", "alert_rule", "ruleId"))],
)
async def update_rule(
    rule_id: RuleId, body: RuleUpdate, ctx: Ctx, caller: CurrentCaller
) -> RulePublic:
    """Change some fields; disabling returns the rule to ``ok`` silently."""
    row = await changes.update_rule(
        ctx,
        caller,
        rule_id,
        _changes(body),
        for_=body.for_,
        for_seconds=body.for_seconds,
        shown=_secret_free(body.model_dump(by_alias=True, exclude_unset=True, mode="json")),
        box=ctx.secrets,
    )
    return RulePublic.from_row(row)


@router.delete(
    "/rules/{ruleId}",
    status_code=204,
    response_class=Response,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("alert_rule.delete", "alert_rule", "ruleId"))],
)
async def delete_rule(rule_id: RuleId, ctx: Ctx, caller: CurrentCaller) -> Response:
    """Delete a rule; its events stay on record."""
    await changes.delete_rule(ctx, caller, rule_id)
    return Response(status_code=204)


# ------------------------------------------------------------------ events


@router.get("/events", response_model=EventPage, dependencies=[allow(INSTANCE_MONITOR)])
async def list_events(
    ctx: Ctx,
    caller: CurrentCaller,
    rule_id: Annotated[int | None, Query(alias="ruleId", ge=1, le=MAX_ID)] = None,
    kind: Literal["firing", "resolved"] | None = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> EventPage:
    """Firing and resolved transitions, newest first, with the deciding value."""
    after = decode_cursor(cursor, (int,))
    async with ctx.db.read() as conn:
        items, key = await queries.list_events(
            conn,
            tenants=caller.tenant_scope,
            rule_id=rule_id,
            kind=kind,
            limit=limit,
            after_id=None if after is None else after[0],
        )
    return EventPage(
        items=[EventPublic.from_row(r) for r in items],
        next=cursor_for(None if key is None else [key]),
    )


@router.get("/metrics", response_model=MetricValues, dependencies=[allow(INSTANCE_MONITOR)])
async def metric_values(
    ctx: Ctx,
    caller: CurrentCaller,
    tenant: Annotated[str | None, Query(max_length=64, description="'*': every tenant")] = None,
) -> MetricValues:
    """The alert metrics' values now, for one tenant or every tenant."""
    tenant = scope(caller, tenant if tenant is not None else default_scope(caller))
    async with ctx.db.read() as conn:
        values = await queries.current_values(conn, tenant=tenant, now=ctx.now())
    return MetricValues(items=[MetricValue.model_validate(v) for v in values])


# ---------------------------------------------------------------- silences


@router.get("/silences", response_model=SilencePage, dependencies=[allow(INSTANCE_MONITOR)])
async def list_silences(
    ctx: Ctx,
    caller: CurrentCaller,
    state: Literal["active", "pending", "expired", "all"] = "all",
    limit: Limit = 50,
    cursor: Cursor = None,
) -> SilencePage:
    after = decode_cursor(cursor, (int,))
    now = ctx.now()
    async with ctx.db.read() as conn:
        items, key = await silences.list_silences(
            conn,
            tenants=caller.tenant_scope,
            now=now,
            state=state,
            limit=limit,
            after_id=None if after is None else after[0],
        )
    return SilencePage(
        items=[SilencePublic.from_row(r, now) for r in items],
        next=cursor_for(None if key is None else [key]),
    )


@router.post(
    "/silences",
    status_code=201,
    response_model=SilencePublic,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("alert_silence.create", "alert_silence"))],
)
async def create_silence(body: SilenceCreate, ctx: Ctx, caller: CurrentCaller) -> SilencePublic:
    """Silence the notifications of matching rules for a time window."""
    matcher = body.matcher
    request = SilenceRequest(
        rule_id=matcher.rule_id,
        metric=matcher.metric,
        tenant=matcher.tenant,
        starts_at=body.starts_at,
        ends_at=body.ends_at,
        duration=body.duration,
        comment=body.comment,
    )
    shown = body.model_dump(by_alias=True, exclude_none=True, mode="json")
    row = await changes.create_silence(ctx, caller, request, shown=shown)
    now = ctx.now()
    return SilencePublic.from_row(row, now)


@router.post(
    "/silences/{silenceId}/expire",
    response_model=SilencePublic,
    dependencies=[
        allow(ENGINE_OPERATE, audit=Audit("alert_silence.expire", "alert_silence", "silenceId"))
    ],
)
async def expire_silence(silence_id: SilenceId, ctx: Ctx, caller: CurrentCaller) -> SilencePublic:
    """End a silence now; notifications owed go out at the next evaluation."""
    now = ctx.now()
    row = await changes.expire_silence(ctx, caller, silence_id, now=now)
    return SilencePublic.from_row(row, now)


@router.delete(
    "/silences/{silenceId}",
    status_code=204,
    response_class=Response,
    dependencies=[
        allow(ENGINE_OPERATE, audit=Audit("alert_silence.delete", "alert_silence", "silenceId"))
    ],
)
async def delete_silence(silence_id: SilenceId, ctx: Ctx, caller: CurrentCaller) -> Response:
    await changes.delete_silence(ctx, caller, silence_id)
    return Response(status_code=204)
