"""The API's callers (DESIGN "Auth"): the request dependency
:func:`current_caller` turns a bearer token into a
:class:`~flowledger.access.callers.Caller` (401 ``unauthenticated`` without a
valid one). Users, tokens and callers themselves live below the API, in
:mod:`flowledger.access` (the CLI and the demo use them too); their names
are re-exported here for the routers.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Request
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

from flowledger.access.callers import ALL_TENANTS, DEFAULT_TENANT, Caller
from flowledger.access.errors import Unauthenticated
from flowledger.access.tokens import caller_for_token, create_user, hash_token, issue_token
from flowledger.db.database import Database

__all__ = [
    "ALL_TENANTS",
    "BEARER",
    "DEFAULT_TENANT",
    "Caller",
    "CurrentCaller",
    "authenticate",
    "caller_for_token",
    "create_user",
    "current_caller",
    "hash_token",
    "issue_token",
]

BEARER = HTTPBearer(auto_error=False, description="A flowledger API token.")


async def authenticate(request: Request) -> Caller:
    """The request's caller from its ``Authorization: Bearer`` header, looked
    up once per request (kept on ``request.state``); 401 ``unauthenticated``
    without a valid token. The route's access declaration
    (:mod:`flowledger.api.route_access`) calls it before the body is read."""
    known = getattr(request.state, "caller", None)
    if isinstance(known, Caller):
        return known
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    token = token.strip()
    if scheme.lower() != "bearer" or not token:
        raise Unauthenticated("a bearer token is required")
    db: Database = request.app.state.api.db
    async with db.read() as conn:
        caller = await caller_for_token(conn, token)
    if caller is None:
        raise Unauthenticated("the bearer token is unknown or revoked")
    request.state.caller = caller
    return caller


async def current_caller(
    request: Request,
    _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)],
) -> Caller:
    """The request's caller (see :func:`authenticate`); the bearer scheme
    parameter documents the token in the OpenAPI document."""
    return await authenticate(request)


CurrentCaller = Annotated[Caller, Depends(current_caller)]
