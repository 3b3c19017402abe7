"""The operator's changes to alert rules and silences (SPEC O-22, A-2, A-3):
each one transaction holding the change and its ``operation_audit`` row
(:func:`flowledger.access.audit.audited_change`; actions
``alert_rule.create|update|delete``, ``alert_silence.create|expire|delete``).
The caller's tenant scope is applied here: a rule or silence of a tenant the
caller cannot see is 404, one over every tenant (no tenant) is used only by a
caller who sees every tenant. What the audit's detail shows of a request
(webhook secrets replaced by a flag) is the caller's ``shown``."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from flowledger.access.audit import AuditContext, AuditEntry, audited_change
from flowledger.access.callers import Caller
from flowledger.access.errors import Forbidden
from flowledger.access.permissions import require_tenant
from flowledger.ops.alerts import rules, silences
from flowledger.ops.alerts.rules import RuleFields, parse_duration
from flowledger.outbound.secrets import SecretBox

OVERALL = "*"  # a rule, silence or metric over every tenant


def scope(caller: Caller, tenant: str | None) -> str | None:
    """The tenant of a rule, silence or metric reading (None: overall) once
    the caller may use it."""
    if tenant is None or tenant == OVERALL:
        if not caller.all_tenants:
            raise Forbidden(
                "a rule or silence over every tenant needs access to every tenant",
                field="tenant",
            )
        return None
    require_tenant(caller, tenant)
    return tenant


def default_scope(caller: Caller) -> str | None:
    """Without a tenant: the whole engine for a caller who sees every tenant
    (as the runtime status panel counts), else the caller's own."""
    return None if caller.all_tenants else caller.default_tenant


def for_seconds_of(for_: int | float | str | None, for_seconds: int | None) -> int | None:
    """A rule's duration from ``for`` or ``forSeconds`` (not both; None:
    neither given)."""
    if for_ is not None and for_seconds is not None:
        raise rules.AlertRuleInvalid("give for or forSeconds, not both", field="for")
    if for_seconds is not None:
        return parse_duration(for_seconds, field="forSeconds")
    if for_ is not None:
        return parse_duration(for_)
    return None


@dataclass
class RuleRequest:
    """A rule to create, as asked: ``for_`` / ``for_seconds`` as given (None:
    not given; neither: fire at once)."""

    name: str
    metric: str
    comparison: str
    threshold: float
    for_: int | float | str | None = None
    for_seconds: int | None = None
    severity: str = "warning"
    email_to: list[str] = field(default_factory=list)
    webhook_url: str | None = None
    webhook_secret: str | None = None
    in_app_users: list[str] = field(default_factory=list)
    enabled: bool = True


async def create_rule(
    ctx: AuditContext,
    caller: Caller,
    request: RuleRequest,
    *,
    tenant: str | None,
    shown: dict[str, Any],
    box: SecretBox | None,
) -> tuple[dict[str, Any], str | None]:
    """Create a rule in ``tenant`` (``*``/None: overall); answers the row and
    the webhook secret when one was generated."""
    entry = AuditEntry.by(caller, "alert_rule.create", "alert_rule")
    async with audited_change(ctx, entry) as conn:
        entry.tenant_id = scope(caller, tenant)
        entry.detail.update(shown)
        fields = RuleFields(
            name=request.name,
            metric=request.metric,
            comparison=request.comparison,
            threshold=request.threshold,
            for_seconds=for_seconds_of(request.for_, request.for_seconds) or 0,
            severity=request.severity,
            email_to=request.email_to,
            webhook_url=request.webhook_url,
            webhook_secret=request.webhook_secret,
            in_app_users=request.in_app_users,
            enabled=request.enabled,
        )
        row, generated = await rules.create_rule(
            conn,
            tenant=entry.tenant_id,
            fields=fields,
            actor=caller.user_id,
            now=ctx.now(),
            box=box,
        )
        entry.target_id = str(row["id"])
    return row, generated


async def update_rule(
    ctx: AuditContext,
    caller: Caller,
    rule_id: int,
    changes: dict[str, Any],
    *,
    for_: int | float | str | None,
    for_seconds: int | None,
    shown: dict[str, Any],
    box: SecretBox | None,
) -> dict[str, Any]:
    """Change some fields of a rule (``changes`` in :class:`RuleFields`
    names; the duration as ``for_`` or ``for_seconds``)."""
    entry = AuditEntry.by(caller, "alert_rule.update", "alert_rule", rule_id)
    async with audited_change(ctx, entry) as conn:
        entry.detail.update(shown)
        seconds = for_seconds_of(for_, for_seconds)
        if seconds is not None:
            changes = {**changes, "for_seconds": seconds}
        row = await rules.update_rule(
            conn, rule_id, changes, now=ctx.now(), tenants=caller.tenant_scope, box=box
        )
        entry.tenant_id = row["tenant_id"]
    return row


async def delete_rule(ctx: AuditContext, caller: Caller, rule_id: int) -> None:
    """Delete a rule; its events stay on record."""
    entry = AuditEntry.by(caller, "alert_rule.delete", "alert_rule", rule_id)
    async with audited_change(ctx, entry) as conn:
        row = await rules.delete_rule(conn, rule_id, tenants=caller.tenant_scope)
        entry.tenant_id = row["tenant_id"]


@dataclass
class SilenceRequest:
    """A silence to create, as asked: a rule or a metric (or neither) in a
    tenant, from ``starts_at`` (None: now) until ``ends_at`` or for
    ``duration`` (one of them)."""

    rule_id: int | None = None
    metric: str | None = None
    tenant: str | None = None
    starts_at: datetime | None = None
    ends_at: datetime | None = None
    duration: str | int | None = None
    comment: str = ""


async def create_silence(
    ctx: AuditContext, caller: Caller, request: SilenceRequest, *, shown: dict[str, Any]
) -> dict[str, Any]:
    """Silence the notifications of matching rules for a time window."""
    entry = AuditEntry.by(caller, "alert_silence.create", "alert_silence")
    async with audited_change(ctx, entry) as conn:
        entry.detail.update(shown)
        now = ctx.now()
        starts = request.starts_at or now
        if (request.ends_at is None) == (request.duration is None):
            raise silences.AlertSilenceInvalid(
                "give endsAt or duration (one of them)", field="endsAt"
            )
        ends = request.ends_at
        if request.duration is not None:
            seconds = parse_duration(request.duration, field="duration")
            try:
                ends = starts + timedelta(seconds=seconds)
            except OverflowError:  # startsAt near year 9999: a 422, not a 500
                raise silences.AlertSilenceInvalid(
                    "startsAt plus duration is past the year 9999", field="duration"
                ) from None
        assert ends is not None
        tenant = request.tenant
        if request.rule_id is not None:
            rule = await rules.require_rule(conn, request.rule_id, tenants=caller.tenant_scope)
            if tenant is not None and tenant != rule["tenant_id"]:
                raise silences.AlertSilenceInvalid(
                    "matcher.tenant is not the rule's tenant", field="matcher.tenant"
                )
            tenant = rule["tenant_id"]
            silence_scope = scope(caller, OVERALL if tenant is None else tenant)
        elif tenant is None and not caller.all_tenants:
            silence_scope = caller.default_tenant
        else:
            silence_scope = scope(caller, OVERALL if tenant is None else tenant)
        entry.tenant_id = silence_scope
        row = await silences.create_silence(
            conn,
            tenant=silence_scope,
            rule_id=request.rule_id,
            metric=request.metric,
            starts_at=starts,
            ends_at=ends,
            comment=request.comment,
            actor=caller.user_id,
            now=now,
        )
        entry.target_id = str(row["id"])
    return row


async def expire_silence(
    ctx: AuditContext, caller: Caller, silence_id: int, *, now: datetime
) -> dict[str, Any]:
    """End a silence at ``now``; notifications owed go out at the next
    evaluation."""
    entry = AuditEntry.by(caller, "alert_silence.expire", "alert_silence", silence_id)
    async with audited_change(ctx, entry) as conn:
        row = await silences.expire_silence(conn, silence_id, now=now, tenants=caller.tenant_scope)
        entry.tenant_id = row["tenant_id"]
    return row


async def delete_silence(ctx: AuditContext, caller: Caller, silence_id: int) -> None:
    """Delete a silence."""
    entry = AuditEntry.by(caller, "alert_silence.delete", "alert_silence", silence_id)
    async with audited_change(ctx, entry) as conn:
        row = await silences.delete_silence(conn, silence_id, tenants=caller.tenant_scope)
        entry.tenant_id = row["tenant_id"]
