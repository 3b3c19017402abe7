"""Alert silences (SPEC O-22): a time window ``[startsAt, endsAt)`` and a
matcher. A silence matches a rule when each matcher field it sets equals the
rule's: ``ruleId``, ``metric``, ``tenant`` (a silence without a tenant
matches every tenant and the overall rules; only callers who see every
tenant may create one). While a matching silence is active, the evaluator
keeps evaluating (state and events are written) but sends no notification;
once it ends, a notification still owed for the current episode goes out
(:mod:`.evaluator`).

Expiring a silence ends it now (``endsAt = now``, ``expiredAt`` set; the
row stays on record); deleting it removes the row. Connection-level
functions; the caller owns the transaction and the tenant check.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import false, select, true, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.alert_schema import workflow_alert_silences as silences
from flowledger.errors import FlowledgerError, InvalidStateError, NotFoundError
from flowledger.ops.alerts.rules import check_metric

Tenants = Sequence[str] | None
MAX_COMMENT = 2000


class AlertSilenceInvalid(FlowledgerError):
    code = "alert_silence_invalid"


class AlertSilenceNotFound(NotFoundError):
    code = "alert_silence_not_found"


class AlertSilenceExpired(InvalidStateError):
    code = "alert_silence_expired"


def _tenant_filter(tenants: Tenants) -> Any:
    if tenants is None:
        return true()
    return silences.c.tenant_id.in_(list(tenants)) if tenants else false()


def matches(silence: Mapping[str, Any], rule: Mapping[str, Any], now: datetime) -> bool:
    """Whether ``silence`` is active at ``now`` and its matcher takes ``rule``."""
    if not silence["starts_at"] <= now < silence["ends_at"]:
        return False
    if silence["rule_id"] is not None and silence["rule_id"] != rule["id"]:
        return False
    if silence["metric"] is not None and silence["metric"] != rule["metric"]:
        return False
    return silence["tenant_id"] is None or silence["tenant_id"] == rule["tenant_id"]


async def active_silences(conn: AsyncConnection, now: datetime) -> list[dict[str, Any]]:
    """Silences active at ``now`` (a range of ``ix_workflow_alert_silences_ends``)."""
    rows = await conn.execute(
        select(silences).where(silences.c.ends_at > now, silences.c.starts_at <= now)
    )
    return [dict(r) for r in rows.mappings()]


async def create_silence(
    conn: AsyncConnection,
    *,
    tenant: str | None,
    rule_id: int | None,
    metric: str | None,
    starts_at: datetime,
    ends_at: datetime,
    comment: str,
    actor: str,
    now: datetime,
) -> dict[str, Any]:
    if ends_at <= starts_at:
        raise AlertSilenceInvalid("endsAt must be after startsAt", field="endsAt")
    if ends_at <= now:
        raise AlertSilenceInvalid("endsAt must be in the future", field="endsAt")
    if metric is not None:
        try:
            check_metric(metric)
        except FlowledgerError as exc:
            raise AlertSilenceInvalid(exc.message, field="matcher.metric") from None
    if not comment.strip():
        raise AlertSilenceInvalid("a silence needs a comment", field="comment")
    row = (
        (
            await conn.execute(
                silences.insert()
                .values(
                    tenant_id=tenant,
                    rule_id=rule_id,
                    metric=metric,
                    starts_at=starts_at,
                    ends_at=ends_at,
                    comment=comment[:MAX_COMMENT],
                    created_by=actor,
                    created_at=now,
                    expired_at=None,
                )
                .returning(*silences.c)
            )
        )
        .mappings()
        .one()
    )
    return dict(row)


async def require_silence(
    conn: AsyncConnection, silence_id: int, *, tenants: Tenants, lock: bool = False
) -> dict[str, Any]:
    query = select(silences).where(silences.c.id == silence_id, _tenant_filter(tenants))
    if lock:
        query = query.with_for_update()
    row = (await conn.execute(query)).mappings().first()
    if row is None:
        raise AlertSilenceNotFound(f"alert silence {silence_id} does not exist", field="silenceId")
    return dict(row)


async def list_silences(
    conn: AsyncConnection,
    *,
    tenants: Tenants,
    now: datetime,
    state: str = "all",
    limit: int = 50,
    after_id: int | None = None,
) -> tuple[list[dict[str, Any]], int | None]:
    """Silences newest first; ``state`` ``active`` (now in the window),
    ``pending`` (starts later), ``expired`` (ended) or ``all``."""
    query = select(silences).where(_tenant_filter(tenants))
    if state == "active":
        query = query.where(silences.c.starts_at <= now, silences.c.ends_at > now)
    elif state == "pending":
        query = query.where(silences.c.starts_at > now)
    elif state == "expired":
        query = query.where(silences.c.ends_at <= now)
    if after_id is not None:
        query = query.where(silences.c.id < after_id)
    rows = await conn.execute(query.order_by(silences.c.id.desc()).limit(limit + 1))
    items = [dict(r) for r in rows.mappings()]
    more = len(items) > limit
    items = items[:limit]
    return items, (int(items[-1]["id"]) if more else None)


async def expire_silence(
    conn: AsyncConnection, silence_id: int, *, now: datetime, tenants: Tenants
) -> dict[str, Any]:
    """End the silence now (409 when it has already ended)."""
    row = await require_silence(conn, silence_id, tenants=tenants, lock=True)
    if row["ends_at"] <= now:
        raise AlertSilenceExpired(f"alert silence {silence_id} has already ended")
    # a silence that has not started yet becomes an empty window at now
    result = await conn.execute(
        update(silences)
        .where(silences.c.id == silence_id)
        .values(ends_at=now, starts_at=min(row["starts_at"], now), expired_at=now)
        .returning(*silences.c)
    )
    return dict(result.mappings().one())


async def delete_silence(
    conn: AsyncConnection, silence_id: int, *, tenants: Tenants
) -> dict[str, Any]:
    row = await require_silence(conn, silence_id, tenants=tenants, lock=True)
    await conn.execute(silences.delete().where(silences.c.id == silence_id))
    return row
