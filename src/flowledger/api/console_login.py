"""Signing in to the web console: one-time login codes and the session
endpoints under ``/api/workflows/console``.

``flowledger run`` / ``serve`` mint a code for the admin and print one URL,
``/login#code=…``. The code sits in the URL *fragment*, which a browser never
sends to the server, so it never reaches an access log; the page posts it to
``POST /api/workflows/console/session`` and receives a fresh bearer token in the
response body (never in a URL either). A code is random, short-lived
(:data:`CODE_TTL`), single-use and kept in this process only as its sha256
digest. ``POST /api/workflows/console/logout`` revokes the caller's own token.

Both mutations write an ``operation_audit`` row (``console.login``,
``console.logout``).
"""

from __future__ import annotations

import hashlib
import secrets
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from fastapi import APIRouter, Request
from pydantic import Field
from sqlalchemy import update

from flowledger.api.audit import AuditEntry, write_audit
from flowledger.api.auth import CurrentCaller, hash_token, issue_token
from flowledger.api.deps import ApiContext
from flowledger.api.errors import Unauthenticated
from flowledger.api.schemas import ApiModel, RequestModel
from flowledger.db.engine_schema import api_tokens

CODE_TTL = timedelta(minutes=10)


@dataclass(frozen=True)
class _Pending:
    user_id: str
    expires_at: datetime


class LoginCodes:
    """Single-use login codes of this process (thread-safe: the CLI mints
    them before or while uvicorn serves)."""

    def __init__(self, ttl: timedelta = CODE_TTL) -> None:
        self.ttl = ttl
        self._codes: dict[str, _Pending] = {}
        self._lock = threading.Lock()

    def mint(self, user_id: str, *, now: datetime | None = None) -> str:
        code = secrets.token_urlsafe(24)
        moment = now or datetime.now(UTC)
        with self._lock:
            self._codes = {k: v for k, v in self._codes.items() if v.expires_at > moment}
            self._codes[_digest(code)] = _Pending(user_id, moment + self.ttl)
        return code

    def redeem(self, code: str, *, now: datetime | None = None) -> str | None:
        """The user the code was minted for, once; None when it is unknown,
        used or expired."""
        moment = now or datetime.now(UTC)
        with self._lock:
            pending = self._codes.pop(_digest(code), None)
        if pending is None or pending.expires_at <= moment:
            return None
        return pending.user_id


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()


LOGIN_CODES = LoginCodes()
"""The process's codes: the CLI mints, the session endpoint redeems."""


def login_url(base: str, user_id: str) -> str:
    """The one URL that opens the console signed in as ``user_id``."""
    return f"{base.rstrip('/')}/login#code={LOGIN_CODES.mint(user_id)}"


class SessionCreate(RequestModel):
    code: str = Field(min_length=1, max_length=200)


class SessionPublic(ApiModel):
    token: str
    user_id: str


class LogoutPublic(ApiModel):
    revoked: bool


router = APIRouter(prefix="/api/workflows/console", tags=["console"])


@router.post("/session", response_model=SessionPublic, response_model_by_alias=True)
async def create_session(body: SessionCreate, request: Request) -> SessionPublic:
    """Exchange a one-time login code for a new bearer token (401
    ``login_code_invalid`` when it is unknown, used or expired)."""
    ctx: ApiContext = request.app.state.api
    user_id = LOGIN_CODES.redeem(body.code)
    if user_id is None:
        raise _InvalidCode("the login code is unknown, used or expired", field="code")
    async with ctx.db.begin() as conn:
        token = await issue_token(conn, user_id, now=ctx.now())
    await write_audit(
        ctx, AuditEntry(actor=user_id, action="console.login", target_type="session"), "ok"
    )
    return SessionPublic(token=token, user_id=user_id)


@router.post("/logout", response_model=LogoutPublic, response_model_by_alias=True)
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
