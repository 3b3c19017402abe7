"""Signing in to the web console: one-time login codes and the session
endpoints under ``/api/workflows/console``.

``flowledger run`` / ``serve`` mint a code for the admin and print one URL,
``/login#code=…``. The code sits in the URL *fragment*, which a browser never
sends to the server, so it never reaches an access log; the page posts it to
``POST /api/workflows/console/session`` and receives a fresh bearer token in the
response body (never in a URL either). A code is random, short-lived
(:data:`~flowledger.access.login_codes.CODE_TTL`), single-use and kept in
the process's runtime only as its sha256 digest
(:class:`~flowledger.access.login_codes.LoginCodes`).
``POST /api/workflows/console/logout`` revokes the caller's own token.

Both mutations write an ``operation_audit`` row (``console.login``,
``console.logout``).
"""

from __future__ import annotations

from fastapi import APIRouter, Request
from pydantic import Field
from sqlalchemy import update

from flowledger.access.login_codes import LoginCodes
from flowledger.api.audit import AuditEntry, write_audit
from flowledger.api.auth import CurrentCaller, hash_token, issue_token
from flowledger.api.deps import ApiContext
from flowledger.api.errors import Unauthenticated
from flowledger.api.route_access import AUTHENTICATED, GuardedRoute, public
from flowledger.api.schemas import ApiModel, RequestModel
from flowledger.db.engine_schema import api_tokens


def login_url(base: str, user_id: str, codes: LoginCodes) -> str:
    """The one URL that opens the console signed in as ``user_id``, with a
    code minted in ``codes`` (the runtime's: the session endpoint of the app
    built from it redeems it)."""
    return f"{base.rstrip('/')}/login#code={codes.mint(user_id)}"


class SessionCreate(RequestModel):
    code: str = Field(min_length=1, max_length=200)


class SessionPublic(ApiModel):
    token: str
    user_id: str


class LogoutPublic(ApiModel):
    revoked: bool


router = APIRouter(prefix="/api/workflows/console", tags=["console"], route_class=GuardedRoute)


@router.post(
    "/session",
    response_model=SessionPublic,
    response_model_by_alias=True,
    dependencies=[public("the one-time login code in the body stands in for a token")],
)
async def create_session(body: SessionCreate, request: Request) -> SessionPublic:
    """Exchange a one-time login code for a new bearer token (401
    ``login_code_invalid`` when it is unknown, used or expired)."""
    ctx: ApiContext = request.app.state.api
    user_id = ctx.login_codes.redeem(body.code)
    if user_id is None:
        raise _InvalidCode("the login code is unknown, used or expired", field="code")
    async with ctx.db.begin() as conn:
        token = await issue_token(conn, user_id, now=ctx.now())
    await write_audit(
        ctx, AuditEntry(actor=user_id, action="console.login", target_type="session"), "ok"
    )
    return SessionPublic(token=token, user_id=user_id)


@router.post(
    "/logout",
    response_model=LogoutPublic,
    response_model_by_alias=True,
    dependencies=[AUTHENTICATED],
)
async def logout(caller: CurrentCaller, request: Request) -> LogoutPublic:
    """Revoke the bearer token of this request."""
    ctx: ApiContext = request.app.state.api
    scheme, _, token = request.headers.get("authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not token:  # CurrentCaller already required it
        raise Unauthenticated("a bearer token is required")
    async with ctx.db.begin() as conn:
        result = await conn.execute(
            update(api_tokens)
            .where(
                api_tokens.c.token_hash == hash_token(token.strip()),
                api_tokens.c.revoked_at.is_(None),
            )
            .values(revoked_at=ctx.now())
        )
    await write_audit(
        ctx,
        AuditEntry(actor=caller.user_id, action="console.logout", target_type="session"),
        "ok",
    )
    return LogoutPublic(revoked=result.rowcount == 1)


class _InvalidCode(Unauthenticated):
    code = "login_code_invalid"
