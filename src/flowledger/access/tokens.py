"""Users and their bearer tokens (DESIGN "Auth").

A token is ``secrets.token_urlsafe(32)``, shown once and stored only as its
sha256 hex digest in ``api_tokens``. A token may narrow its user's
permissions and tenants (its own ``permissions`` / ``tenants`` columns); it
never widens them. ``"*"`` in tenants means every tenant.

:func:`create_user` and :func:`issue_token` are what the CLI (``flowledger
token create``, the admin token printed by ``flowledger run``) and the demo
loader call; the API's request dependency
(:func:`flowledger.api.auth.current_caller`) reads a caller with
:func:`caller_for_token`. Nothing here checks what a caller may do — that is
:mod:`flowledger.access.permissions`.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.access.callers import ALL_TENANTS, DEFAULT_TENANT, Caller
from flowledger.db.engine_schema import api_tokens, users


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


async def create_user(
    conn: AsyncConnection,
    user_id: str,
    *,
    display_name: str | None = None,
    roles: Sequence[str] = (),
    permissions: Sequence[str] = (),
    tenants: Sequence[str] = (DEFAULT_TENANT,),
    now: datetime,
) -> None:
    """Insert a user row (inside the caller's transaction)."""
    await conn.execute(
        users.insert().values(
            id=user_id,
            display_name=display_name or user_id,
            roles=list(roles),
            permissions=list(permissions),
            tenants=list(tenants),
            created_at=now,
        )
    )


async def issue_token(
    conn: AsyncConnection,
    user_id: str,
    *,
    now: datetime,
    permissions: Sequence[str] | None = None,
    tenants: Sequence[str] | None = None,
) -> str:
    """A new bearer token for ``user_id``; only its hash is stored. ``permissions``
    and ``tenants`` narrow the user's own for this token."""
    token = secrets.token_urlsafe(32)
    await conn.execute(
        api_tokens.insert().values(
            token_hash=hash_token(token),
            user_id=user_id,
            permissions=None if permissions is None else list(permissions),
            tenants=None if tenants is None else list(tenants),
            created_at=now,
        )
    )
    return token


def _narrow(own: Sequence[str], token: Sequence[str] | None) -> tuple[str, ...]:
    if token is None:
        return tuple(own)
    if ALL_TENANTS in own:
        return tuple(token)
    return tuple(t for t in own if t in token)


async def caller_for_token(conn: AsyncConnection, token: str) -> Caller | None:
    row = (
        await conn.execute(
            select(
                users.c.id,
                users.c.display_name,
                users.c.roles,
                users.c.permissions,
                users.c.tenants,
                api_tokens.c.permissions.label("token_permissions"),
                api_tokens.c.tenants.label("token_tenants"),
            )
            .select_from(api_tokens.join(users, users.c.id == api_tokens.c.user_id))
            .where(api_tokens.c.token_hash == hash_token(token), api_tokens.c.revoked_at.is_(None))
        )
    ).first()
    if row is None:
        return None
    permissions: list[str] = list(row.permissions or [])
    if row.token_permissions is not None:
        permissions = [p for p in permissions if p in row.token_permissions]
    return Caller(
        user_id=row.id,
        display_name=row.display_name,
        roles=tuple(row.roles or []),
        permissions=frozenset(permissions),
        tenants=_narrow(row.tenants or [], row.token_tenants),
    )
