"""Alert rules (SPEC O-22): validation and storage.

A rule watches one registered metric (:mod:`.metrics`) for one tenant, or
for the whole engine (``tenant`` None — visible and editable only by callers
who see every tenant). It fires when ``value <comparison> threshold`` has
held for ``for`` (duration suppression), with a severity and channels:
email recipients, one webhook URL (its shape checked here, its address by the
outbound SSRF guard when the notification is sent, X-4; signed with the
rule's secret, generated and returned once when not given) and in-app users.

``for`` is given as whole seconds (``300``), a Prometheus-style duration
(``"5m"``, ``"1h30m"``, ``"90s"``, ``"2d"``) or an ISO 8601 duration
(``"PT5M"``); it is stored as seconds and shown in the Prometheus style.

Changing a rule's condition keeps its evaluation state (the next evaluation
decides); disabling it returns it to ``ok`` without a notification.
Connection-level functions: the caller owns the transaction and the tenant
check (``tenants`` narrows every lookup, A-3).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from pydantic import TypeAdapter, ValidationError
from sqlalchemy import false, select, true, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.alert_schema import COMPARISONS, SEVERITIES
from flowledger.db.alert_schema import workflow_alert_rules as rules
from flowledger.errors import FlowledgerError, NotFoundError
from flowledger.ops.alerts.metrics import get_metric, metric_names
from flowledger.outbound.secrets import SecretBox, need_box
from flowledger.outbound.ssrf import OutboundRefused, parse_target

MAX_FOR_SECONDS = 7 * 86400
MAX_RECIPIENTS = 50
MAX_URL_CHARS = 2048
_SHORT = re.compile(r"^(?:(\d+)d)?(?:(\d+)h)?(?:(\d+)m)?(?:(\d+)s)?$")
_EMAIL = re.compile(r"^[^@\s,;<>]{1,64}@[^@\s,;<>]{1,255}$")
_USER = re.compile(r"^[^\s\x00]{1,128}$")
_TIMEDELTA = TypeAdapter(timedelta)
EDITABLE = frozenset(
    {
        "name",
        "metric",
        "comparison",
        "threshold",
        "for_seconds",
        "severity",
        "email_to",
        "webhook_url",
        "webhook_secret",
        "in_app_users",
        "enabled",
    }
)

Tenants = Sequence[str] | None


class AlertRuleInvalid(FlowledgerError):
    """A rule field has a value that cannot work (422 on ``field``)."""

    code = "alert_rule_invalid"


class AlertMetricUnknown(AlertRuleInvalid):
    code = "alert_metric_unknown"


class AlertRuleNotFound(NotFoundError):
    code = "alert_rule_not_found"


def parse_duration(value: int | float | str, *, field: str = "for") -> int:
    """Whole seconds of ``value`` (seconds, ``"5m"`` style, or ISO 8601)."""
    seconds: float | None = None
    if isinstance(value, bool):
        seconds = None
    elif isinstance(value, int | float):
        seconds = float(value)
    elif isinstance(value, str):
        text = value.strip()
        match = _SHORT.match(text) if text else None
        if text.isdigit():
            seconds = float(text)
        elif match and any(match.groups()):
            d, h, m, s = (int(g or 0) for g in match.groups())
            seconds = float(((d * 24 + h) * 60 + m) * 60 + s)
        elif text[:1] in ("P", "p"):
            try:
                seconds = _TIMEDELTA.validate_python(text.upper()).total_seconds()
            except ValidationError:
                seconds = None
    if seconds is None or seconds != int(seconds):
        raise AlertRuleInvalid(
            f"{field} must be whole seconds, a duration like '5m' or '1h30m', "
            "or an ISO 8601 duration like 'PT5M'",
            field=field,
        )
    if not 0 <= seconds <= MAX_FOR_SECONDS:
        raise AlertRuleInvalid(f"{field} must be between 0 and 7 days", field=field)
    return int(seconds)


def format_duration(seconds: int) -> str:
    """``300`` → ``"5m"``, ``5400`` → ``"1h30m"``, ``0`` → ``"0s"``."""
    if seconds == 0:
        return "0s"
    out = ""
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60), ("s", 1)):
        count, seconds = divmod(seconds, size)
        if count:
            out += f"{count}{unit}"
    return out


def check_metric(name: str) -> str:
    if get_metric(name) is None:
        raise AlertMetricUnknown(
            f"{name!r} is not an available metric (available: {', '.join(metric_names())})",
            field="metric",
            available=metric_names(),
        )
    return name


def _choice(value: str, allowed: list[str], field: str) -> str:
    if value not in allowed:
        raise AlertRuleInvalid(f"{field} must be one of {', '.join(allowed)}", field=field)
    return value


def check_emails(values: Sequence[str]) -> list[str]:
    out = list(dict.fromkeys(v.strip() for v in values))
    if len(out) > MAX_RECIPIENTS:
        raise AlertRuleInvalid(f"at most {MAX_RECIPIENTS} email recipients", field="channels.email")
    for value in out:
        if not _EMAIL.match(value):
            raise AlertRuleInvalid(f"{value!r} is not an email address", field="channels.email")
    return out


def check_users(values: Sequence[str]) -> list[str]:
    out = list(dict.fromkeys(v.strip() for v in values))
    if len(out) > MAX_RECIPIENTS:
        raise AlertRuleInvalid(f"at most {MAX_RECIPIENTS} in-app users", field="channels.inApp")
    for value in out:
        if not _USER.match(value):
            raise AlertRuleInvalid(f"{value!r} is not a user id", field="channels.inApp")
    return out


def check_webhook_url(url: str) -> str:
    """The URL as it will be sent if it is an absolute http(s) URL (shape only;
    the address is checked by the SSRF guard when a notification is sent)."""
    try:
        normalized = str(parse_target(url.strip()).url)
    except OutboundRefused as exc:
        raise AlertRuleInvalid(
            f"the webhook URL is not usable: {exc.reason}", field="channels.webhook.url"
        ) from None
    if len(normalized) > MAX_URL_CHARS:
        raise AlertRuleInvalid(
            f"the webhook URL is longer than {MAX_URL_CHARS} characters once encoded",
            field="channels.webhook.url",
        )
    return normalized


@dataclass
class RuleFields:
    """A rule as written (create: every field; update: see ``changes``)."""

    name: str
    metric: str
    comparison: str
    threshold: float
    for_seconds: int
    severity: str = "warning"
    email_to: list[str] = field(default_factory=list)
    webhook_url: str | None = None
    webhook_secret: str | None = None
    in_app_users: list[str] = field(default_factory=list)
    enabled: bool = True


def _checked(values: Mapping[str, Any]) -> dict[str, Any]:
    """Column values of the given fields, each validated."""
    out: dict[str, Any] = {}
    for key, value in values.items():
        if key == "metric":
            out[key] = check_metric(value)
        elif key == "comparison":
            out[key] = _choice(value, COMPARISONS, "comparison")
        elif key == "severity":
            out[key] = _choice(value, SEVERITIES, "severity")
        elif key == "for_seconds":
            out[key] = parse_duration(value)
        elif key == "email_to":
            out[key] = check_emails(value)
        elif key == "in_app_users":
            out[key] = check_users(value)
        elif key == "webhook_url":
            out[key] = None if value is None else check_webhook_url(value)
        elif key == "threshold":
            if value != value or value in (float("inf"), float("-inf")):
                raise AlertRuleInvalid("threshold must be a finite number", field="threshold")
            out[key] = float(value)
        elif key != "webhook_secret":
            out[key] = value
    return out


def _tenant_filter(tenants: Tenants) -> Any:
    if tenants is None:
        return true()
    return rules.c.tenant_id.in_(list(tenants)) if tenants else false()


async def create_rule(
    conn: AsyncConnection,
    *,
    tenant: str | None,
    fields: RuleFields,
    actor: str,
    now: datetime,
    box: SecretBox | None = None,
) -> tuple[dict[str, Any], str | None]:
    """Insert a rule; returns its row and the webhook secret when one was
    generated (shown once; stored encrypted with ``box``, which a rule with a
    webhook needs)."""
    values = _checked({k: v for k, v in fields.__dict__.items()})
    generated = None
    secret = fields.webhook_secret
    if values["webhook_url"] is not None and secret is None:
        secret = generated = secrets.token_urlsafe(32)
    encrypted = None if secret is None else need_box(box).encrypt(secret)
    row = (
        (
            await conn.execute(
                rules.insert()
                .values(
                    tenant_id=tenant,
                    **values,
                    webhook_secret_encrypted=encrypted,
                    state="ok",
                    state_since=None,
                    episode=0,
                    notified=None,
                    created_by=actor,
                    created_at=now,
                    updated_at=now,
                )
                .returning(*rules.c)
            )
        )
        .mappings()
        .one()
    )
    return dict(row), generated


async def get_rule(
    conn: AsyncConnection, rule_id: int, *, tenants: Tenants = None, lock: bool = False
) -> dict[str, Any] | None:
    query = select(rules).where(rules.c.id == rule_id, _tenant_filter(tenants))
    if lock:
        query = query.with_for_update()
    row = (await conn.execute(query)).mappings().first()
    return None if row is None else dict(row)


async def require_rule(
    conn: AsyncConnection, rule_id: int, *, tenants: Tenants = None, lock: bool = False
) -> dict[str, Any]:
    row = await get_rule(conn, rule_id, tenants=tenants, lock=lock)
    if row is None:
        raise AlertRuleNotFound(f"alert rule {rule_id} does not exist", field="ruleId")
    return row


async def list_rules(
    conn: AsyncConnection,
    *,
    tenants: Tenants,
    enabled: bool | None = None,
    metric: str | None = None,
    limit: int = 50,
    after_id: int | None = None,
) -> tuple[list[dict[str, Any]], int | None]:
    """Rules newest first (keyset by id); returns the page and the next key."""
    query = select(rules).where(_tenant_filter(tenants))
    if enabled is not None:
        query = query.where(rules.c.enabled.is_(enabled))
    if metric is not None:
        query = query.where(rules.c.metric == metric)
    if after_id is not None:
        query = query.where(rules.c.id < after_id)
    rows = (await conn.execute(query.order_by(rules.c.id.desc()).limit(limit + 1))).mappings()
    items = [dict(r) for r in rows]
    more = len(items) > limit
    items = items[:limit]
    return items, (int(items[-1]["id"]) if more else None)


async def update_rule(
    conn: AsyncConnection,
    rule_id: int,
    changes: Mapping[str, Any],
    *,
    now: datetime,
    tenants: Tenants,
    box: SecretBox | None = None,
) -> dict[str, Any]:
    """Apply ``changes`` (keys of :data:`EDITABLE`; a new webhook secret is
    encrypted with ``box``); returns the new row."""
    unknown = set(changes) - EDITABLE
    if unknown:
        raise AlertRuleInvalid(f"cannot change {sorted(unknown)}", field=sorted(unknown)[0])
    current = await require_rule(conn, rule_id, tenants=tenants, lock=True)
    values = _checked(changes)
    url = values.get("webhook_url", current["webhook_url"])
    if "webhook_secret" in changes and changes["webhook_secret"] is not None:
        values["webhook_secret_encrypted"] = need_box(box).encrypt(changes["webhook_secret"])
    elif url is not None and current["webhook_secret_encrypted"] is None:
        raise AlertRuleInvalid(
            "a webhook needs a secret: give channels.webhook.secret",
            field="channels.webhook.secret",
        )
    if url is None:
        values["webhook_secret_encrypted"] = None
    if values.get("enabled") is False and current["enabled"]:
        values.update(state="ok", state_since=None)
    row = (
        (
            await conn.execute(
                update(rules)
                .where(rules.c.id == rule_id)
                .values(**values, updated_at=now)
                .returning(*rules.c)
            )
        )
        .mappings()
        .one()
    )
    return dict(row)


async def delete_rule(conn: AsyncConnection, rule_id: int, *, tenants: Tenants) -> dict[str, Any]:
    """Delete a rule (its events stay on record; its pending webhook
    notifications are skipped, having no secret left)."""
    row = await require_rule(conn, rule_id, tenants=tenants, lock=True)
    await conn.execute(rules.delete().where(rules.c.id == rule_id))
    return row
