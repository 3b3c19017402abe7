"""The one mapping from errors to HTTP responses (SPEC A-4, STYLE "mapped to
HTTP once, in api/").

Every error body has the same shape: ``{"code", "message", "field"}`` plus the
error's own details (``problems`` of an invalid definition, ``permission`` of
a refusal, ``status`` of an object in the wrong state). Status codes follow
the error's class, walking its MRO, so a new subclass of a mapped class needs
no change here:

====================================================  ======
NotFoundError (instance, task, definition, schedule)   404
ConflictError, InvalidStateError, TaskWithoutToken     409
DefinitionError, FormInvalidError, UnknownJobType      422
any other FlowledgerError with a ``field``              422
any other FlowledgerError                               400
FastAPI's RequestValidationError                        422 ``validation_error``
anything else                                           500 ``internal_error``
====================================================  ======

A 500 never carries a stack trace or an exception message: it is logged with
its traceback and the body only says ``internal_error``. Unexpected errors
are caught by a small ASGI middleware (not Starlette's ServerErrorMiddleware,
which re-raises after answering) so the server keeps serving and test
transports see the 500 like any client would.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.encoders import jsonable_encoder
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from flowledger.access.errors import Forbidden as Forbidden
from flowledger.access.errors import Unauthenticated as Unauthenticated
from flowledger.compensation.errors import AttachmentTooLarge, LengthRequired, NoteTooLarge
from flowledger.definitions.problems import DefinitionError
from flowledger.engine.errors import FormInvalidError, NotAssignee
from flowledger.errors import (
    ConflictError,
    FlowledgerError,
    NotFoundError,
    UnknownJobTypeError,
)

log = logging.getLogger("flowledger.api")


class CursorInvalid(FlowledgerError):
    code = "cursor_invalid"


_STATUS_BY_CLASS: dict[type[FlowledgerError], int] = {
    Unauthenticated: 401,
    Forbidden: 403,
    NotAssignee: 403,
    NotFoundError: 404,
    ConflictError: 409,
    DefinitionError: 422,
    FormInvalidError: 422,
    UnknownJobTypeError: 422,
    AttachmentTooLarge: 413,
    NoteTooLarge: 413,
    LengthRequired: 411,
}


def status_for(exc: FlowledgerError) -> int:
    for cls in type(exc).__mro__:
        status = _STATUS_BY_CLASS.get(cls)
        if status is not None:
            return status
    return 422 if exc.field else 400


def error_body(code: str, message: str, field: str | None = None, **details: Any) -> dict[str, Any]:
    body: dict[str, Any] = jsonable_encoder(details)
    body.update(code=code, message=message, field=field)
    return body


def flowledger_response(exc: FlowledgerError) -> JSONResponse:
    status = status_for(exc)
    headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
    body = error_body(exc.code, exc.message, exc.field, **exc.details)
    return JSONResponse(body, status_code=status, headers=headers)


def _field(loc: tuple[Any, ...] | list[Any]) -> str:
    return ".".join(str(part) for part in loc)


def validation_response(exc: RequestValidationError) -> JSONResponse:
    errors = [
        {
            "field": _field(err.get("loc", ())),
            "message": str(err.get("msg", "")),
            "type": str(err.get("type", "")),
        }
        for err in exc.errors()
    ]
    field = errors[0]["field"] if errors else None
    message = errors[0]["message"] if errors else "invalid request"
    if field:
        message = f"{field}: {message}"
    return JSONResponse(
        error_body("validation_error", message, field, errors=errors), status_code=422
    )


_HTTP_CODES = {
    400: "bad_request",
    401: "unauthenticated",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    415: "unsupported_media_type",
}


def http_response(exc: StarletteHTTPException) -> JSONResponse:
    code = _HTTP_CODES.get(exc.status_code, f"http_{exc.status_code}")
    return JSONResponse(
        error_body(code, str(exc.detail)), status_code=exc.status_code, headers=exc.headers
    )


def internal_response() -> JSONResponse:
    return JSONResponse(error_body("internal_error", "internal error"), status_code=500)


class CatchAllMiddleware:
    """Answer an unexpected exception with a 500 ``internal_error`` (logged
    with its traceback) instead of letting it escape the application."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracking_send(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracking_send)
        except Exception:
            log.exception("unhandled error on %s %s", scope.get("method"), scope.get("path"))
            if started:
                raise
            await internal_response()(scope, receive, send)


def install_error_handlers(app: FastAPI) -> None:
    async def on_flowledger(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, FlowledgerError)
        return flowledger_response(exc)

    async def on_validation(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, RequestValidationError)
        # the route's permission was checked before its body was read
        # (flowledger.api.route_access), so this is the caller's own 422
        return validation_response(exc)

    async def on_http(_request: Request, exc: Exception) -> JSONResponse:
        assert isinstance(exc, StarletteHTTPException)
        return http_response(exc)

    app.add_exception_handler(FlowledgerError, on_flowledger)
    app.add_exception_handler(RequestValidationError, on_validation)
    app.add_exception_handler(StarletteHTTPException, on_http)
    app.add_middleware(CatchAllMiddleware)
