"""Who may call a route, declared on the route (SPEC A-2, issue 29 item 1).

Every route of the API names its access as one dependency of the route,
read once when the route is built (not from source text):

- ``dependencies=[allow(P)]`` — the caller must hold ``P`` (``allow(P, Q)``:
  one of them); ``allow(P, audit=Audit(action, target_type, "pathParam"))``
  also writes the ``operation_audit`` row of a refused mutation (``failed``,
  ``detail.code = forbidden``), as every mutation is audited;
- ``dependencies=[AUTHENTICATED]`` — any caller with a valid token (the
  route scopes what it answers to the caller, e.g. your own messages);
- ``dependencies=[public("why")]`` — no bearer token (the console login, the
  metrics scrape with its own token);
- ``dependencies=[SIGNED_CALLBACK]`` — an external system's callback, taken
  on the HMAC signature over its raw bytes (:mod:`flowledger.outbound.signing`)
  instead of a token.

:class:`GuardedRoute` (every router's ``route_class``) refuses to build a
route without exactly one declaration, and its handler enforces the
declaration **before** FastAPI reads or validates the body: a caller without
the permission gets 401/403 whatever the body holds (invalid, malformed or
hostile). Only then is a JSON body checked against the input caps
(:func:`flowledger.api.input_guards.check_json`, 422 naming the field) and
handed to FastAPI's validation. Per-object rules (your own task, the tenant
of the object: 404 across tenants) stay in the routes, after the object is
loaded. :func:`declaration_of` answers a route's declaration (the tests walk
every route of the OpenAPI document with it).
"""

from __future__ import annotations

from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Annotated, Any

from fastapi import Depends, Request, Response
from fastapi.params import Depends as DependsParam
from fastapi.responses import JSONResponse
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials

from flowledger.access.callers import Caller
from flowledger.access.errors import Forbidden, Unauthenticated
from flowledger.access.permissions import require, require_any
from flowledger.api.audit import AuditEntry, write_audit
from flowledger.api.auth import BEARER, authenticate
from flowledger.api.deps import ApiContext
from flowledger.api.errors import error_body
from flowledger.api.input_guards import Limits, Refusal, check_json, is_json
from flowledger.outbound.signing import SignatureInvalid, verify

MUTATIONS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
_GUARDED = "flowledger.route_access"


@dataclass(frozen=True)
class Audit:
    """The audit row of a refused mutation: its action, target type and the
    path parameter naming the target (none for a create)."""

    action: str
    target_type: str
    target_param: str | None = None


class Declaration:
    """A route's access declaration; as a FastAPI dependency it only checks
    that :class:`GuardedRoute` enforced it (a route built otherwise fails)."""

    async def __call__(self, request: Request) -> None:
        if not request.scope.get(_GUARDED):
            raise RuntimeError(f"{request.url.path}: the route is not a GuardedRoute")

    async def enforce(self, request: Request, ctx: ApiContext) -> Response | None:
        raise NotImplementedError


class TokenDeclaration(Declaration):
    """A declaration that takes a bearer token (the OpenAPI document says so)."""

    async def __call__(  # type: ignore[override]
        self,
        request: Request,
        _credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(BEARER)],
    ) -> None:
        await super().__call__(request)


@dataclass(frozen=True, eq=False)
class Allow(TokenDeclaration):
    """The caller holds one of ``permissions``."""

    permissions: tuple[str, ...]
    audit: Audit | None = None

    async def enforce(self, request: Request, ctx: ApiContext) -> Response | None:
        caller = await authenticate(request)
        try:
            if len(self.permissions) == 1:
                require(caller, self.permissions[0])
            else:
                require_any(caller, *self.permissions)
        except Forbidden as refusal:
            if self.audit is not None and request.method in MUTATIONS:
                await _audit_refusal(request, ctx, caller, self.audit, refusal)
            raise
        return None


@dataclass(frozen=True, eq=False)
class Authenticated(TokenDeclaration):
    """Any caller with a valid bearer token."""

    async def enforce(self, request: Request, ctx: ApiContext) -> Response | None:
        await authenticate(request)
        return None


@dataclass(frozen=True, eq=False)
class Public(Declaration):
    """No bearer token; ``why`` says what stands in for one."""

    why: str

    async def enforce(self, request: Request, ctx: ApiContext) -> Response | None:
        return None


class CallbackSignatureInvalid(Unauthenticated):
    """A callback without a valid signature; ``code`` is the reason."""

    code = "signature_invalid"

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.code = reason


@dataclass(frozen=True, eq=False)
class SignedCallback(Declaration):
    """A callback signed with ``FLOWLEDGER_CALLBACK_SECRET`` over the timestamp,
    the request line and the raw body: 503 ``callback_secret_unset`` while no
    secret is set, 401 naming the reason (``signature_missing``,
    ``signature_mismatch``, ``timestamp_invalid``,
    ``timestamp_out_of_tolerance``) without a valid signature."""

    async def enforce(self, request: Request, ctx: ApiContext) -> Response | None:
        settings = ctx.settings
        if not settings.callback_secret:
            body = error_body(
                "callback_secret_unset",
                "callbacks are refused: FLOWLEDGER_CALLBACK_SECRET is not set on this server",
            )
            return JSONResponse(body, status_code=503)
        try:
            verify(
                settings.callback_secret,
                request.headers,
                await request.body(),
                now=ctx.now().timestamp(),
                tolerance_s=settings.signature_tolerance_s,
                context=f"{request.method} {request.url.path}",
            )
        except SignatureInvalid as exc:
            raise CallbackSignatureInvalid(exc.reason, str(exc)) from None
        return None


def allow(*permissions: str, audit: Audit | None = None) -> DependsParam:
    """The route needs one of ``permissions`` (see the module docstring)."""
    if not permissions:
        raise ValueError("allow() needs at least one permission")
    return DependsParam(Allow(tuple(permissions), audit))


def public(why: str) -> DependsParam:
    """The route takes no bearer token; ``why`` names what replaces it."""
    return DependsParam(Public(why))


AUTHENTICATED = DependsParam(Authenticated())
SIGNED_CALLBACK = DependsParam(SignedCallback())


async def _audit_refusal(
    request: Request, ctx: ApiContext, caller: Caller, audit: Audit, refusal: Forbidden
) -> None:
    target = request.path_params.get(audit.target_param) if audit.target_param else None
    entry = AuditEntry(
        actor=caller.user_id,
        action=audit.action,
        target_type=audit.target_type,
        target_id=None if target is None else str(target),
        detail={"code": refusal.code, "message": refusal.message},
    )
    await write_audit(ctx, entry, "failed")


def declaration_of(route: APIRoute) -> Declaration:
    """The one access declaration among the route's dependencies."""
    found = [d.dependency for d in route.dependencies if isinstance(d.dependency, Declaration)]
    if len(found) != 1:
        raise TypeError(
            f"route {sorted(route.methods or ())} {route.path} ({route.name}) must declare "
            f"its access exactly once (allow(...), AUTHENTICATED, public(...) or "
            f"SIGNED_CALLBACK); it declares {len(found)}"
        )
    return found[0]


class GuardedRoute(APIRoute):
    """An :class:`~fastapi.routing.APIRoute` that enforces its declaration
    (read once, here) before the body is read, then checks a JSON body's
    shape against the input caps, then hands over to FastAPI."""

    def __init__(self, path: str, endpoint: Callable[..., Any], **kwargs: Any) -> None:
        super().__init__(path, endpoint, **kwargs)
        self.declaration = declaration_of(self)

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def guarded(request: Request) -> Response:
            ctx: ApiContext = request.app.state.api
            refused = await self.declaration.enforce(request, ctx)
            if refused is not None:
                return refused
            request.scope[_GUARDED] = True
            try:
                await _check_body(request, ctx)
            except Refusal as refusal:
                return refusal.response()
            return await handler(request)

        return guarded


async def _check_body(request: Request, ctx: ApiContext) -> None:
    """Refuse a hostile JSON body (see :mod:`flowledger.api.input_guards`)."""
    if request.method not in MUTATIONS:
        return
    content_type = request.headers.get("content-type")
    if not is_json(content_type):
        return
    raw = await request.body()
    if raw:
        check_json(raw, Limits.from_settings(ctx.settings))
