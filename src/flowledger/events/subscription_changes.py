"""Creating, changing and deleting event subscriptions (SPEC X-5, A-2, A-3):
each one transaction holding the change and its ``operation_audit`` row
(``subscription.create|update|delete``; a secret shows in the detail only as
``secretChanged``). A subscription of a tenant the caller cannot see is 404;
the rows are written by :mod:`flowledger.events.subscriptions`."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from flowledger.access.audit import AuditContext, AuditEntry, audited_change
from flowledger.access.callers import Caller
from flowledger.access.permissions import require_tenant
from flowledger.events import subscriptions
from flowledger.outbound.secrets import SecretBox


def shown(values: Mapping[str, Any]) -> dict[str, Any]:
    """What the audit detail shows of a request: every value but the secret."""
    detail = {k: v for k, v in values.items() if k != "secret"}
    if "secret" in values:
        detail["secretChanged"] = True
    return detail


@dataclass
class SubscriptionRequest:
    """A subscription to create, as asked (``tenant`` None: the caller's
    first; ``secret`` None: one is generated)."""

    name: str
    event_types: list[str]
    target_url: str
    definition_key: str | None = None
    secret: str | None = None
    enabled: bool = True
    tenant: str | None = None
    given: dict[str, Any] = field(default_factory=dict)  # the request's fields as sent


async def create_subscription(
    ctx: AuditContext, caller: Caller, request: SubscriptionRequest, *, box: SecretBox
) -> tuple[dict[str, Any], str | None]:
    """Subscribe a URL to events; answers the row and the secret when it was
    generated (shown once)."""
    entry = AuditEntry.by(caller, "subscription.create", "subscription")
    async with audited_change(ctx, entry) as conn:
        tenant = request.tenant or caller.default_tenant
        require_tenant(caller, tenant)
        entry.tenant_id = tenant
        entry.detail.update(shown(request.given))
        row, generated = await subscriptions.create_subscription(
            conn,
            tenant=tenant,
            name=request.name,
            event_types=request.event_types,
            target_url=request.target_url,
            definition_key=request.definition_key,
            secret=request.secret,
            enabled=request.enabled,
            actor=caller.user_id,
            now=ctx.now(),
            box=box,
        )
        entry.target_id = str(row["id"])
    return row, generated


async def update_subscription(
    ctx: AuditContext,
    caller: Caller,
    subscription_id: int,
    changes: Mapping[str, Any],
    *,
    given: Mapping[str, Any],
    box: SecretBox | None,
) -> dict[str, Any]:
    """Change some fields (``given``: as sent, for the audit); disabling
    makes its pending deliveries skip (L-4)."""
    entry = AuditEntry.by(caller, "subscription.update", "subscription", subscription_id)
    async with audited_change(ctx, entry) as conn:
        entry.detail.update(shown(given))
        row = await subscriptions.update_subscription(
            conn, subscription_id, changes, now=ctx.now(), tenants=caller.tenant_scope, box=box
        )
        entry.tenant_id = row["tenant_id"]
    return row


async def delete_subscription(ctx: AuditContext, caller: Caller, subscription_id: int) -> None:
    """Soft-delete a subscription: its undelivered webhooks are skipped, its
    hits stay on record."""
    entry = AuditEntry.by(caller, "subscription.delete", "subscription", subscription_id)
    async with audited_change(ctx, entry) as conn:
        row = await subscriptions.delete_subscription(
            conn, subscription_id, now=ctx.now(), tenants=caller.tenant_scope
        )
        entry.tenant_id = row["tenant_id"]
