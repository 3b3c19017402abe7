"""Callers (DESIGN "Auth"): users with permissions and visible tenants, and
the bearer tokens that act for them.

A token is ``secrets.token_urlsafe(32)``, shown once and stored only as its
sha256 hex digest in ``api_tokens``. A token may narrow its user's
permissions and tenants (its own ``permissions`` / ``tenants`` columns); it
never widens them. ``"*"`` in tenants means every tenant.

``create_user`` and ``issue_token`` are what the CLI (``flowledger token
create``, the admin token printed by ``flowledger run``) calls; the request
dependency is :func:`current_caller`. This module never checks what a caller
may do — that is :mod:`flowledger.api.permissions`.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.api.errors import Unauthenticated
from flowledger.db.database import Database
from flowledger.db.engine_schema import api_tokens, users

ALL_TENANTS = "*"
DEFAULT_TENANT = "default"


@dataclass(frozen=True)
class Caller:
    """The authenticated user behind a request."""

    user_id: str
    display_name: str
    roles: tuple[str, ...]
    permissions: frozenset[str]
    tenants: tuple[str, ...]

    @property
    def all_tenants(self) -> bool:
        return ALL_TENANTS in self.tenants

    def sees(self, tenant: str) -> bool:
        return self.all_tenants or tenant in self.tenants

    @property
    def tenant_scope(self) -> list[str] | None:
        """The tenants a query is limited to (None: every tenant)."""
        return None if self.all_tenants else list(self.tenants)

    @property
    def default_tenant(self) -> str:
        """Where a create lands when the request names no tenant: the caller's
        first tenant, or ``default`` for a caller who sees every tenant."""
        for tenant in self.tenants:
            if tenant != ALL_TENANTS:
                return tenant
        return DEFAULT_TENANT

    def has(self, permission: str) -> bool:
        return permission in self.permissions


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


_bearer = HTTPBearer(auto_error=False, description="A flowledger API token.")


async def current_caller(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> Caller:
    """The request's caller; 401 ``unauthenticated`` without a valid token."""
    if credentials is None or not credentials.credentials:
        raise Unauthenticated("a bearer token is required")
    db: Database = request.app.state.api.db
    async with db.read() as conn:
        caller = await caller_for_token(conn, credentials.credentials)
    if caller is None:
        raise Unauthenticated("the bearer token is unknown or revoked")
    request.state.caller = caller
    return caller


CurrentCaller = Annotated[Caller, Depends(current_caller)]
