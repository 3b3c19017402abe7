"""Request and response models of the alerting API (SPEC O-22), camelCase
in JSON. Shared by :mod:`flowledger.api.routers.alerts` and the CLI's
``--json`` output."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Self

from pydantic import (
    BeforeValidator,
    Field,
    FiniteFloat,
    field_validator,
    model_validator,
)

from flowledger.api.schemas import (
    MAX_ID,
    NO_NUL,
    ApiModel,
    Name,
    RequestModel,
    TenantId,
    UtcTime,
    not_null,
)
from flowledger.ops.alerts.rules import MAX_RECIPIENTS, format_duration

Id = Annotated[int, Field(ge=1, le=MAX_ID)]
MetricName = Annotated[str, Field(min_length=1, max_length=64), NO_NUL]
Address = Annotated[str, Field(min_length=1, max_length=320), NO_NUL]
UserId = Annotated[str, Field(min_length=1, max_length=128), NO_NUL]
Url = Annotated[str, Field(min_length=1, max_length=2048), NO_NUL]
Secret = Annotated[str, Field(min_length=16, max_length=255), NO_NUL]
Duration = Annotated[int | Annotated[str, Field(min_length=1, max_length=32)], Field()]
_SYMBOLS = {">": "gt", ">=": "gte", "<": "lt", "<=": "lte"}
Comparison = Annotated[
    Literal["gt", "gte", "lt", "lte"],
    BeforeValidator(lambda v: _SYMBOLS.get(v, v) if isinstance(v, str) else v),
    Field(description="gt, gte, lt or lte (the symbols >, >=, <, <= are accepted too)"),
]
Severity = Literal["info", "warning", "critical"]
Scope = TenantId | Literal["*"]


class WebhookIn(RequestModel):
    url: Url
    secret: Secret | None = Field(
        default=None, description="HMAC secret; generated (and returned once) when omitted."
    )


def _webhook(value: Any) -> Any:
    """A bare URL string is short for ``{"url": …}``."""
    return {"url": value} if isinstance(value, str) else value


Webhook = Annotated[WebhookIn, BeforeValidator(_webhook)]


class ChannelsIn(RequestModel):
    email: list[Address] = Field(default_factory=list, max_length=MAX_RECIPIENTS)
    webhook: Webhook | None = Field(
        default=None, description='{"url", "secret"?}, or just the URL as a string.'
    )
    in_app: list[UserId] = Field(default_factory=list, max_length=MAX_RECIPIENTS)


class ChannelsUpdate(RequestModel):
    """Only the channels given change; ``webhook: null`` removes the webhook."""

    email: list[Address] | None = Field(default=None, max_length=MAX_RECIPIENTS)
    webhook: Webhook | None = None
    in_app: list[UserId] | None = Field(default=None, max_length=MAX_RECIPIENTS)


class RuleCreate(RequestModel):
    name: Name
    metric: MetricName = Field(description="queue_backlog, dead_letters, job_failure_rate, …")
    comparison: Comparison
    threshold: FiniteFloat
    for_: Duration = Field(
        default=0,
        alias="for",
        description="How long the condition must hold before firing: seconds (300), "
        "'5m' / '1h30m', or ISO 8601 ('PT5M').",
    )
    for_seconds: int | None = Field(
        default=None, ge=0, description="Instead of `for`: the duration in seconds."
    )
    severity: Severity = "warning"
    channels: ChannelsIn = Field(default_factory=ChannelsIn)
    enabled: bool = True
    tenant: Scope | None = Field(
        default=None,
        description="The tenant whose jobs the metric counts; '*' (or null) for every "
        "tenant (callers who see every tenant only). Omitted: your default tenant.",
    )


class RuleUpdate(RequestModel):
    """Only the fields given change (the tenant never does)."""

    name: Name | None = None
    metric: MetricName | None = None
    comparison: Comparison | None = None
    threshold: FiniteFloat | None = None
    for_: Duration | None = Field(default=None, alias="for")
    for_seconds: int | None = Field(default=None, ge=0)
    severity: Severity | None = None
    channels: ChannelsUpdate | None = None
    enabled: bool | None = None

    _not_null = field_validator(
        "name", "metric", "comparison", "threshold", "for_", "for_seconds", "severity", "enabled"
    )(not_null)


class WebhookPublic(ApiModel):
    url: str
    has_secret: bool


class ChannelsPublic(ApiModel):
    email: list[str]
    webhook: WebhookPublic | None = None
    in_app: list[str]


class RulePublic(ApiModel):
    id: int
    tenant: str | None = Field(description="null: the metric over every tenant")
    name: str
    metric: str
    comparison: str
    threshold: float
    for_: str = Field(alias="for")
    for_seconds: int
    severity: str
    channels: ChannelsPublic
    enabled: bool
    state: str
    state_since: datetime | None = None
    last_value: float | None = None
    evaluated_at: datetime | None = None
    last_event_id: int | None = None
    created_by: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        webhook = None
        if row["webhook_url"]:
            webhook = WebhookPublic(
                url=row["webhook_url"], has_secret=bool(row["webhook_secret_encrypted"])
            )
        return cls.model_validate(
            {
                "id": row["id"],
                "tenant": row["tenant_id"],
                "name": row["name"],
                "metric": row["metric"],
                "comparison": row["comparison"],
                "threshold": row["threshold"],
                "for": format_duration(int(row["for_seconds"])),
                "for_seconds": row["for_seconds"],
                "severity": row["severity"],
                "channels": ChannelsPublic(
                    email=list(row["email_to"]), webhook=webhook, in_app=list(row["in_app_users"])
                ),
                "enabled": row["enabled"],
                "state": row["state"],
                "state_since": row["state_since"],
                "last_value": row["last_value"],
                "evaluated_at": row["evaluated_at"],
                "last_event_id": row["last_event_id"],
                "created_by": row["created_by"],
                "created_at": row["created_at"],
                "updated_at": row["updated_at"],
            }
        )


class RuleCreated(RulePublic):
    """``webhookSecret`` is set only when it was generated, and shown only here."""

    webhook_secret: str | None = None


class RulePage(ApiModel):
    items: list[RulePublic]
    next: str | None = None


class EventPublic(ApiModel):
    id: int
    rule_id: int
    rule_name: str
    tenant: str | None = None
    metric: str
    kind: str
    episode: int
    value: float | None = Field(description="the metric's value that decided the transition")
    comparison: str
    threshold: float
    severity: str
    silenced: bool
    silence_id: int | None = None
    notified_at: datetime | None = None
    notification_job_ids: list[int]
    occurred_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> Self:
        values = {k: row[k] for k in cls.model_fields if k in row}
        values.update(tenant=row["tenant_id"], notification_job_ids=row["notification_jobs"])
        return cls.model_validate(values)


class EventPage(ApiModel):
    items: list[EventPublic]
    next: str | None = None


class Matcher(RequestModel):
    rule_id: Id | None = None
    metric: MetricName | None = None
    tenant: TenantId | None = None


class SilenceCreate(RequestModel):
    """The matcher may also be given flat (``ruleId``, ``metric``, ``tenant``
    at the top level)."""

    matcher: Matcher = Field(default_factory=Matcher)
    rule_id: Id | None = None
    metric: MetricName | None = None
    tenant: TenantId | None = None
    starts_at: UtcTime | None = Field(default=None, description="Default: now.")
    ends_at: UtcTime | None = None
    duration: Duration | None = Field(
        default=None, description="Instead of endsAt: '2h', 7200 or 'PT2H' from startsAt."
    )
    comment: Annotated[str, Field(max_length=2000), NO_NUL] = ""

    @model_validator(mode="after")
    def _flat_matcher(self) -> Self:
        for name in ("rule_id", "metric", "tenant"):
            flat, nested = getattr(self, name), getattr(self.matcher, name)
            if flat is not None and nested is not None and flat != nested:
                raise ValueError(f"{name} is given twice, differently (top level and matcher)")
            if flat is not None:
                setattr(self.matcher, name, flat)
        return self


class MatcherPublic(ApiModel):
    rule_id: int | None = None
    metric: str | None = None
    tenant: str | None = None


class SilencePublic(ApiModel):
    id: int
    matcher: MatcherPublic
    starts_at: datetime
    ends_at: datetime
    state: Literal["pending", "active", "expired"]
    comment: str
    created_by: str
    created_at: datetime
    expired_at: datetime | None = None

    @classmethod
    def from_row(cls, row: dict[str, Any], now: datetime) -> Self:
        state: Literal["pending", "active", "expired"] = "active"
        if row["ends_at"] <= now:
            state = "expired"
        elif row["starts_at"] > now:
            state = "pending"
        return cls(
            id=row["id"],
            matcher=MatcherPublic(
                rule_id=row["rule_id"], metric=row["metric"], tenant=row["tenant_id"]
            ),
            starts_at=row["starts_at"],
            ends_at=row["ends_at"],
            state=state,
            comment=row["comment"],
            created_by=row["created_by"],
            created_at=row["created_at"],
            expired_at=row["expired_at"],
        )


class SilencePage(ApiModel):
    items: list[SilencePublic]
    next: str | None = None


class MetricValue(ApiModel):
    metric: str
    unit: str
    description: str
    tenant: str | None = None
    value: float | None = None


class MetricValues(ApiModel):
    items: list[MetricValue]
