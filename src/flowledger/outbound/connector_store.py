"""Connector rows and their call audit (SPEC X-3): create, read, list,
update and delete connectors; record and list calls. Every function runs in
the caller's connection and transaction; reads may be limited to some
tenants (``tenants=None``: all of them).

Secrets are encrypted with the caller's
:class:`~flowledger.outbound.secrets.SecretBox` (the runtime's) before they
reach a statement and are decrypted only by :meth:`Connector.secret`, at
call time. A :class:`Connector` never shows its
secret (not in ``repr``, not in any public field): ``has_secret`` is all a
reader learns.

Updates take the changed settings only (:data:`UPDATABLE`); the merged
configuration is validated as a whole (:func:`check_draft`). Changing
``authKind`` to one that needs a secret requires a new secret — a bearer
token is not an HMAC key; changing it to ``none`` drops the stored secret
and the public auth fields.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any, Generic, TypeVar, cast
from urllib.parse import urlsplit

from sqlalchemy import Select, delete, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.connector_schema import connector_calls as calls
from flowledger.db.connector_schema import connectors as c
from flowledger.outbound.connector_config import (
    AuthKind,
    BreakerSettings,
    ConnectorDraft,
    RateLimit,
    check_draft,
)
from flowledger.outbound.connector_errors import (
    ConnectorInvalid,
    ConnectorKeyTaken,
    ConnectorSecretUnreadable,
)
from flowledger.outbound.secrets import SecretBox, SecretUnreadable

UPDATABLE = frozenset(
    {
        "name",
        "base_url",
        "auth_kind",
        "username",
        "header_name",
        "secret",
        "rate_limit",
        "circuit_breaker",
        "default_headers",
        "enabled",
    }
)
PATH_MAX = 2048


@dataclass(frozen=True)
class Connector:
    """One stored connector; the secret stays encrypted until :meth:`secret`."""

    id: int
    tenant_id: str
    key: str
    name: str
    base_url: str
    auth_kind: AuthKind
    username: str | None
    header_name: str | None
    rate_limit: RateLimit | None
    circuit_breaker: BreakerSettings
    default_headers: dict[str, str]
    enabled: bool
    created_by: str
    created_at: datetime
    updated_at: datetime
    secret_encrypted: str | None = field(default=None, repr=False)

    @property
    def has_secret(self) -> bool:
        return self.secret_encrypted is not None

    def secret(self, box: SecretBox) -> str | None:
        """The plain credential (None for ``authKind: none``), decrypted with ``box``."""
        if self.secret_encrypted is None:
            return None
        try:
            return box.decrypt(self.secret_encrypted)
        except SecretUnreadable:
            raise ConnectorSecretUnreadable(
                f"the secret of connector {self.key!r} cannot be decrypted with the "
                "configured key (FLOWLEDGER_SECRET_KEY)"
            ) from None

    def draft(self) -> ConnectorDraft:
        """The configuration as a draft (without the secret)."""
        return ConnectorDraft(
            key=self.key,
            name=self.name,
            base_url=self.base_url,
            auth_kind=self.auth_kind,
            username=self.username,
            header_name=self.header_name,
            rate_limit=self.rate_limit,
            circuit_breaker=self.circuit_breaker,
            default_headers=dict(self.default_headers),
            enabled=self.enabled,
        )

    @classmethod
    def from_row(cls, row: Any) -> Connector:
        rps, burst = row["rate_limit_rps"], row["rate_limit_burst"]
        return cls(
            id=int(row["id"]),
            tenant_id=row["tenant_id"],
            key=row["key"],
            name=row["name"],
            base_url=row["base_url"],
            auth_kind=cast(AuthKind, row["auth_kind"]),
            username=row["auth_username"],
            header_name=row["auth_header_name"],
            rate_limit=None if rps is None else RateLimit(float(rps), int(burst)),
            circuit_breaker=BreakerSettings(
                int(row["breaker_failure_threshold"]), float(row["breaker_reset_timeout_s"])
            ),
            default_headers=dict(row["default_headers"] or {}),
            enabled=bool(row["enabled"]),
            created_by=row["created_by"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
            secret_encrypted=row["secret_encrypted"],
        )


@dataclass(frozen=True)
class ConnectorCall:
    """One row of a connector's call audit."""

    id: int
    connector_id: int
    tenant_id: str
    connector_key: str
    job_id: int | None
    instance_id: int | None
    method: str
    path: str
    status: int | None
    outcome: str
    duration_ms: int
    created_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> ConnectorCall:
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})


T = TypeVar("T")


@dataclass(frozen=True)
class Page(Generic[T]):
    """A page of items and the id to continue after (None: last page)."""

    items: list[T]
    next_after: int | None


def _scoped(query: Select[Any], tenants: list[str] | None) -> Select[Any]:
    return query if tenants is None else query.where(c.c.tenant_id.in_(tenants))


def _columns(draft: ConnectorDraft) -> dict[str, Any]:
    limit, breaker = draft.rate_limit, draft.circuit_breaker
    return {
        "name": draft.name,
        "base_url": draft.base_url,
        "auth_kind": draft.auth_kind,
        "auth_username": draft.username,
        "auth_header_name": draft.header_name,
        "rate_limit_rps": None if limit is None else limit.requests_per_second,
        "rate_limit_burst": None if limit is None else limit.burst,
        "breaker_failure_threshold": breaker.failure_threshold,
        "breaker_reset_timeout_s": breaker.reset_timeout_s,
        "default_headers": dict(draft.default_headers),
        "enabled": draft.enabled,
    }


async def _key_taken(conn: AsyncConnection, tenant: str, key: str) -> bool:
    query = select(c.c.id).where(c.c.tenant_id == tenant, c.c.key == key)
    return (await conn.execute(query)).first() is not None


def _taken(tenant: str, key: str) -> ConnectorKeyTaken:
    return ConnectorKeyTaken(
        f"tenant {tenant!r} already has a connector with key {key!r}", field="key"
    )


async def create_connector(
    conn: AsyncConnection,
    draft: ConnectorDraft,
    *,
    tenant: str,
    actor: str,
    now: datetime,
    box: SecretBox,
) -> Connector:
    """Validate ``draft`` and insert it for ``tenant``; the secret is
    encrypted with ``box`` first. A taken key is :class:`ConnectorKeyTaken` (409)."""
    draft = check_draft(draft)
    if await _key_taken(conn, tenant, draft.key):
        raise _taken(tenant, draft.key)
    secret = None if draft.secret is None else box.encrypt(draft.secret)
    values = {
        **_columns(draft),
        "tenant_id": tenant,
        "key": draft.key,
        "secret_encrypted": secret,
        "created_by": actor,
        "created_at": now,
        "updated_at": now,
    }
    try:
        row = (await conn.execute(insert(c).values(**values).returning(c))).mappings().one()
    except IntegrityError:  # a concurrent create of the same key won
        raise _taken(tenant, draft.key) from None
    return Connector.from_row(row)


async def get_connector(
    conn: AsyncConnection,
    connector_id: int,
    *,
    tenants: list[str] | None = None,
    for_update: bool = False,
) -> Connector | None:
    """The connector if it exists in ``tenants``; ``for_update`` locks its row
    (PostgreSQL; SQLite writers are serialised anyway)."""
    query = _scoped(select(c).where(c.c.id == connector_id), tenants)
    if for_update:
        query = query.with_for_update()
    row = (await conn.execute(query)).mappings().first()
    return None if row is None else Connector.from_row(row)


async def get_connector_by_key(conn: AsyncConnection, *, tenant: str, key: str) -> Connector | None:
    query = select(c).where(c.c.tenant_id == tenant, c.c.key == key)
    row = (await conn.execute(query)).mappings().first()
    return None if row is None else Connector.from_row(row)


async def list_connectors(
    conn: AsyncConnection,
    *,
    tenants: list[str] | None = None,
    after_id: int | None = None,
    limit: int = 50,
) -> Page[Connector]:
    """Connectors in ``tenants``, oldest first (by id), keyset paged."""
    query = _scoped(select(c), tenants)
    if after_id is not None:
        query = query.where(c.c.id > after_id)
    rows = (await conn.execute(query.order_by(c.c.id).limit(limit + 1))).mappings().all()
    items = [Connector.from_row(r) for r in rows[:limit]]
    return Page(items, items[-1].id if len(rows) > limit else None)


def _origin(url: str) -> tuple[str, str, int | None]:
    parts = urlsplit(url)
    return (parts.scheme.lower(), (parts.hostname or "").lower(), parts.port)


async def update_connector(
    conn: AsyncConnection,
    connector: Connector,
    changes: Mapping[str, Any],
    *,
    now: datetime,
    box: SecretBox,
) -> Connector:
    """Apply ``changes`` (names from :data:`UPDATABLE`; ``secret`` is the new
    plain credential, encrypted with ``box``) to ``connector`` as loaded in
    this transaction."""
    unknown = set(changes) - UPDATABLE
    if unknown:
        raise ValueError(f"not updatable: {', '.join(sorted(unknown))}")
    draft = replace(connector.draft(), **dict(changes))
    kind_changed = draft.auth_kind != connector.auth_kind
    if draft.auth_kind == "none":
        keep_secret = False
        if kind_changed:  # drop what belonged to the old kind unless given again
            draft = replace(
                draft,
                username=changes.get("username"),
                header_name=changes.get("header_name"),
            )
    else:
        # a stored credential is bound to the origin it was given for: moving
        # the connector elsewhere needs the secret again, or anyone allowed to
        # edit connectors could point it at their own host and collect it
        moved = _origin(draft.base_url) != _origin(connector.base_url)
        keep_secret = connector.has_secret and not kind_changed and not moved
        if kind_changed and draft.secret is None:
            raise ConnectorInvalid(
                f"changing authKind to {draft.auth_kind} needs its secret", field="secret"
            )
        if moved and connector.has_secret and draft.secret is None:
            raise ConnectorInvalid(
                "changing the base URL's scheme, host or port needs the secret again",
                field="secret",
            )
        if kind_changed and draft.auth_kind != "basic" and "username" not in changes:
            draft = replace(draft, username=None)
        if kind_changed and draft.auth_kind != "api_key" and "header_name" not in changes:
            draft = replace(draft, header_name=None)
    draft = check_draft(draft, has_stored_secret=keep_secret)
    values: dict[str, Any] = {**_columns(draft), "updated_at": now}
    if draft.secret is not None:
        values["secret_encrypted"] = box.encrypt(draft.secret)
    elif not keep_secret:
        values["secret_encrypted"] = None
    row = (
        (await conn.execute(update(c).where(c.c.id == connector.id).values(**values).returning(c)))
        .mappings()
        .one()
    )
    return Connector.from_row(row)


async def delete_connector(conn: AsyncConnection, connector_id: int) -> bool:
    """Delete the connector; its call audit rows stay."""
    result = await conn.execute(delete(c).where(c.c.id == connector_id))
    return bool(result.rowcount)


async def record_call(
    conn: AsyncConnection,
    connector: Connector,
    *,
    job_id: int | None,
    instance_id: int | None,
    method: str,
    path: str,
    status: int | None,
    outcome: str,
    duration_ms: int,
    now: datetime,
) -> int:
    """Insert one call audit row; returns its id."""
    result = await conn.execute(
        insert(calls)
        .values(
            connector_id=connector.id,
            tenant_id=connector.tenant_id,
            connector_key=connector.key,
            job_id=job_id,
            instance_id=instance_id,
            method=method[:16],
            path=path[:PATH_MAX],
            status=status,
            outcome=outcome[:64],
            duration_ms=max(0, duration_ms),
            created_at=now,
        )
        .returning(calls.c.id)
    )
    return int(result.scalar_one())


async def list_calls(
    conn: AsyncConnection, connector_id: int, *, after_id: int | None = None, limit: int = 50
) -> Page[ConnectorCall]:
    """The connector's calls, newest first, keyset paged by id."""
    query = select(calls).where(calls.c.connector_id == connector_id)
    if after_id is not None:
        query = query.where(calls.c.id < after_id)
    rows = (await conn.execute(query.order_by(calls.c.id.desc()).limit(limit + 1))).mappings().all()
    items = [ConnectorCall.from_row(r) for r in rows[:limit]]
    return Page(items, items[-1].id if len(rows) > limit else None)
