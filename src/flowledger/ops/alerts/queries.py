"""Read-only alert queries (SPEC O-22): the alert events list and the
current values of the metrics. Events are listed newest first, keyset-paged
by id, within the caller's tenants (``ix_workflow_alert_events_tenant``;
one rule's events: ``ix_workflow_alert_events_rule``). Overall events (no
tenant) are visible only to callers who see every tenant."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import false, select, true
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.alert_schema import workflow_alert_events as events
from flowledger.ops.alerts.metrics import measure, metrics

Tenants = Sequence[str] | None


def _tenant_filter(tenants: Tenants) -> Any:
    if tenants is None:
        return true()
    return events.c.tenant_id.in_(list(tenants)) if tenants else false()


async def list_events(
    conn: AsyncConnection,
    *,
    tenants: Tenants,
    rule_id: int | None = None,
    kind: str | None = None,
    limit: int = 50,
    after_id: int | None = None,
) -> tuple[list[dict[str, Any]], int | None]:
    query = select(events).where(_tenant_filter(tenants))
    if rule_id is not None:
        query = query.where(events.c.rule_id == rule_id)
    if kind is not None:
        query = query.where(events.c.kind == kind)
    if after_id is not None:
        query = query.where(events.c.id < after_id)
    rows = await conn.execute(query.order_by(events.c.id.desc()).limit(limit + 1))
    items = [dict(r) for r in rows.mappings()]
    more = len(items) > limit
    items = items[:limit]
    return items, (int(items[-1]["id"]) if more else None)


async def current_values(
    conn: AsyncConnection, *, tenant: str | None, now: datetime
) -> list[dict[str, Any]]:
    """Every registered metric's value now, for ``tenant`` (None: overall)."""
    found = metrics()
    values = await measure(conn, [(m.name, tenant) for m in found], now=now)
    return [
        {
            "metric": m.name,
            "unit": m.unit,
            "description": m.description,
            "tenant": tenant,
            "value": values[(m.name, tenant)],
        }
        for m in found
    ]
