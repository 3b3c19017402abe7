"""Event subscriptions (SPEC X-5): validation, storage and matching.

A subscription names the event types it wants (``task.completed``; ``"*"``
for every event; ``"task.*"`` for every event of one family), an optional
definition key filter, a target URL (http/https; the shape is checked here,
the address by the SSRF guard at delivery time, X-4), a secret and an
enabled flag. The secret is write-only: it is stored encrypted with
the runtime's :class:`~flowledger.outbound.secrets.SecretBox` and never read back through
the API; when the creator gives none, :func:`create_subscription` generates
one and returns it once. Deletion is soft (``deleted_at``): the hits stay on
record, a deleted subscription is "not found" everywhere and its pending
deliveries are skipped like a disabled one's.

Connection-level functions: the caller owns the transaction and the tenant
check (``tenants`` narrows every lookup, SPEC A-3).
"""

from __future__ import annotations

import re
import secrets
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, exists, false, select, true, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.event_schema import workflow_event_subscriptions as subs
from flowledger.engine.queries import Page
from flowledger.errors import FlowledgerError, NotFoundError
from flowledger.outbound.secrets import SecretBox, need_box
from flowledger.outbound.ssrf import OutboundRefused, parse_target

WILDCARD = "*"
MAX_EVENT_TYPES = 50
SECRET_BYTES = 32
MAX_URL_CHARS = 2048  # the column's size
# "task.completed", "instance.*", "*"; lower-case dotted names as the engine emits
_EVENT_TYPE = re.compile(r"^(\*|[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*(\.\*)?)$")
_EDITABLE = frozenset({"name", "event_types", "definition_key", "target_url", "secret", "enabled"})

Tenants = Sequence[str] | None


class SubscriptionInvalid(FlowledgerError):
    """A subscription field has a value that cannot work (422 on ``field``)."""

    code = "subscription_invalid"


class SubscriptionNotFound(NotFoundError):
    code = "subscription_not_found"


def validate_event_types(types: Iterable[str]) -> list[str]:
    """The distinct event types in their given order; at least one, each an
    event name, a family wildcard (``task.*``) or ``*``."""
    out = list(dict.fromkeys(t.strip() for t in types))
    if not out:
        raise SubscriptionInvalid(
            "eventTypes must name at least one event type", field="eventTypes"
        )
    if len(out) > MAX_EVENT_TYPES:
        raise SubscriptionInvalid(
            f"eventTypes may name at most {MAX_EVENT_TYPES} event types", field="eventTypes"
        )
    for value in out:
        if len(value) > 64 or not _EVENT_TYPE.match(value):
            raise SubscriptionInvalid(
                f"{value!r} is not an event type (e.g. 'task.completed', 'task.*' or '*')",
                field="eventTypes",
            )
    return out


def validate_target_url(url: str) -> str:
    """The URL as it will be sent, if it is an absolute http(s) URL without
    user info (shape only; the address is checked when a delivery is sent)."""
    try:
        normalized = str(parse_target(url.strip()).url)
    except OutboundRefused as exc:
        raise SubscriptionInvalid(
            f"targetUrl is not usable: {exc.reason}", field="targetUrl"
        ) from None
    if len(normalized) > MAX_URL_CHARS:  # percent-encoding may lengthen it
        raise SubscriptionInvalid(
            f"targetUrl is longer than {MAX_URL_CHARS} characters once encoded", field="targetUrl"
        )
    return normalized


def new_secret() -> str:
    return secrets.token_urlsafe(SECRET_BYTES)


def subscription_secret(row: Mapping[str, Any], box: SecretBox) -> str:
    """The plain secret of a subscription row, decrypted with ``box`` (raises
    :class:`~flowledger.outbound.secrets.SecretUnreadable` with a wrong key)."""
    return box.decrypt(str(row["secret_encrypted"]))


def matches(subscription: Mapping[str, Any], event_type: str, definition_key: str | None) -> bool:
    """Whether an enabled ``subscription`` wants an event of ``event_type``
    from an instance of ``definition_key``."""
    wanted = subscription["definition_key"]
    if wanted is not None and wanted != definition_key:
        return False
    for pattern in subscription["event_types"]:
        if pattern in (WILDCARD, event_type):
            return True
        if pattern.endswith(".*") and event_type.startswith(pattern[:-1]):
            return True
    return False


def _tenant_filter(tenants: Tenants) -> Any:
    if tenants is None:
        return true()
    return subs.c.tenant_id.in_(list(tenants)) if tenants else false()


async def create_subscription(
    conn: AsyncConnection,
    *,
    tenant: str,
    name: str,
    event_types: Iterable[str],
    target_url: str,
    actor: str,
    now: datetime,
    definition_key: str | None = None,
    secret: str | None = None,
    enabled: bool = True,
    box: SecretBox,
) -> tuple[dict[str, Any], str | None]:
    """Insert a subscription (its secret encrypted with ``box``); returns its
    row and the generated secret (None when the caller gave one)."""
    generated = None if secret else new_secret()
    plain = secret or generated
    assert plain is not None
    values = {
        "tenant_id": tenant,
        "name": name,
        "event_types": validate_event_types(event_types),
        "definition_key": definition_key,
        "target_url": validate_target_url(target_url),
        "secret_encrypted": box.encrypt(plain),
        "enabled": enabled,
        "created_by": actor,
        "created_at": now,
        "updated_at": now,
    }
    new_id = (await conn.execute(subs.insert().values(**values).returning(subs.c.id))).scalar_one()
    return {"id": int(new_id), **values, "deleted_at": None}, generated


async def get_subscription(
    conn: AsyncConnection, subscription_id: int, *, tenants: Tenants = None, lock: bool = False
) -> dict[str, Any] | None:
    """A live (not deleted) subscription within ``tenants``."""
    query = select(subs).where(
        subs.c.id == subscription_id, subs.c.deleted_at.is_(None), _tenant_filter(tenants)
    )
    if lock:
        query = query.with_for_update()
    row = (await conn.execute(query)).mappings().first()
    return None if row is None else dict(row)


async def require_subscription(
    conn: AsyncConnection, subscription_id: int, *, tenants: Tenants = None, lock: bool = False
) -> dict[str, Any]:
    row = await get_subscription(conn, subscription_id, tenants=tenants, lock=lock)
    if row is None:
        raise SubscriptionNotFound(
            f"subscription {subscription_id} not found", field="subscriptionId"
        )
    return row


async def list_subscriptions(
    conn: AsyncConnection,
    *,
    tenants: Tenants,
    enabled: bool | None = None,
    definition_key: str | None = None,
    limit: int = 50,
    after_id: int | None = None,
) -> Page:
    """Live subscriptions newest first (keyset on id)."""
    query = select(subs).where(subs.c.deleted_at.is_(None), _tenant_filter(tenants))
    if enabled is not None:
        query = query.where(subs.c.enabled.is_(enabled))
    if definition_key is not None:
        query = query.where(subs.c.definition_key == definition_key)
    if after_id is not None:
        query = query.where(subs.c.id < after_id)
    rows = [
        dict(r)
        for r in (await conn.execute(query.order_by(subs.c.id.desc()).limit(limit + 1)))
        .mappings()
        .all()
    ]
    if len(rows) <= limit:
        return Page(rows, None)
    return Page(rows[:limit], (rows[limit - 1]["id"],))


async def update_subscription(
    conn: AsyncConnection,
    subscription_id: int,
    changes: Mapping[str, Any],
    *,
    now: datetime,
    tenants: Tenants = None,
    box: SecretBox | None = None,
) -> dict[str, Any]:
    """Apply ``changes`` (keys: name, event_types, definition_key, target_url,
    secret — encrypted with ``box`` —, enabled) to a live subscription and
    return the new row."""
    unknown = set(changes) - _EDITABLE
    if unknown:  # pragma: no cover - the API model admits only editable fields
        raise SubscriptionInvalid(f"cannot change {sorted(unknown)}", field=sorted(unknown)[0])
    await require_subscription(conn, subscription_id, tenants=tenants, lock=True)
    values: dict[str, Any] = {"updated_at": now}
    for name, value in changes.items():
        if name == "event_types":
            values[name] = validate_event_types(value)
        elif name == "target_url":
            values[name] = validate_target_url(value)
        elif name == "secret":
            values["secret_encrypted"] = need_box(box).encrypt(value)
        else:
            values[name] = value
    await conn.execute(update(subs).where(subs.c.id == subscription_id).values(**values))
    return await require_subscription(conn, subscription_id)


async def delete_subscription(
    conn: AsyncConnection, subscription_id: int, *, now: datetime, tenants: Tenants = None
) -> dict[str, Any]:
    """Soft-delete (and disable) a live subscription; returns the row as it was."""
    row = await require_subscription(conn, subscription_id, tenants=tenants, lock=True)
    await conn.execute(
        update(subs)
        .where(subs.c.id == subscription_id)
        .values(enabled=False, deleted_at=now, updated_at=now)
    )
    return row


_LIVE = and_(subs.c.enabled.is_(True), subs.c.deleted_at.is_(None))  # enabled, not deleted


def any_live_subscription() -> ColumnElement[bool]:
    """Whether any tenant has an enabled, undeleted subscription (a
    condition to put in another statement)."""
    return exists().where(_LIVE)


async def enabled_subscriptions(
    conn: AsyncConnection, tenants: Iterable[str]
) -> dict[str, list[dict[str, Any]]]:
    """The enabled live subscriptions of ``tenants``, by tenant, oldest first."""
    wanted = sorted(set(tenants))
    by_tenant: dict[str, list[dict[str, Any]]] = {t: [] for t in wanted}
    if not wanted:
        return by_tenant
    query = select(subs).where(subs.c.tenant_id.in_(wanted), _LIVE).order_by(subs.c.id)
    for row in (await conn.execute(query)).mappings().all():
        by_tenant[row["tenant_id"]].append(dict(row))
    return by_tenant
