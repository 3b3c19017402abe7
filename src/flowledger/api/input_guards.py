"""The API's edge checks on hostile input (issue 17 items 1, 2, 3, 6, 10;
SPEC A-4), one ASGI layer in front of every route instead of a rule per
endpoint. It owns:

- the **body cap**: a request body larger than ``max_json_body_bytes``
  (default 1 MiB; multipart uploads get ``attachment_max_bytes`` plus
  ``UPLOAD_OVERHEAD`` and their route checks its own limit) is answered 413
  ``payload_too_large`` — from its ``Content-Length`` before anything is read,
  or as soon as the streamed chunks pass the cap (nothing past it is read);
- the **JSON check**, before any recursive code sees the document: the text
  must be UTF-8 and well formed (``validation_error``, as FastAPI says for a
  body that is not JSON), nested at
  most ``max_json_depth`` levels (``nesting_too_deep``, measured by a flat
  scan, not by recursion), with no unpaired UTF-16 surrogate in a key or
  value (``unpaired_surrogate``), no ``NaN``/``Infinity``/``1e999``
  (``non_finite_number``), no integer outside signed 64 bits
  (``number_out_of_range``: a 4,300-digit integer included), and the
  ``form``/``payload``-like members at most ``max_form_bytes`` and the
  ``definition``/``source`` members at most ``max_definition_bytes`` once
  serialised (``value_too_large``);
- the **NUL check** of every query and path parameter (``nul_character``,
  ``field`` is ``query.<name>`` or ``path.<name>``): PostgreSQL cannot
  store or compare U+0000 in text.

The body cap and the NUL check answer at once (413 / 422), before routing.
The JSON check is not run here but by the route, through :func:`check_json`,
once the route's access declaration holds
(:class:`flowledger.api.route_access.GuardedRoute`): a caller without the
permission gets 403 whatever the body, and a permitted caller gets the 422
``{code, message, field}`` of a hostile body. Nothing here writes anything.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl

from starlette.exceptions import HTTPException
from starlette.responses import JSONResponse
from starlette.routing import compile_path
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from flowledger.settings import Settings

UPLOAD_OVERHEAD = 64 * 1024
INT64_MAX = 2**63 - 1
FORM_MEMBERS = frozenset({"form", "payload", "variables", "fieldValues", "values", "data"})
DEFINITION_MEMBERS = frozenset({"definition", "source"})
_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(r"[\[\]{}]")


@dataclass(frozen=True)
class Limits:
    """The caps of :class:`InputGuardMiddleware` and :func:`check_json` (see ``docs/limits.md``)."""

    max_json_body_bytes: int
    max_upload_bytes: int
    max_json_depth: int
    max_form_bytes: int
    max_definition_bytes: int

    @classmethod
    def from_settings(cls, s: Settings) -> Limits:
        return cls(
            max_json_body_bytes=s.max_json_body_bytes,
            max_upload_bytes=s.attachment_max_bytes + UPLOAD_OVERHEAD,
            max_json_depth=s.max_json_depth,
            max_form_bytes=s.max_form_bytes,
            max_definition_bytes=s.max_definition_bytes,
        )


class Refusal(Exception):
    """One refused input: an error body and its status."""

    def __init__(self, code: str, message: str, field: str | None, status: int = 422) -> None:
        super().__init__(message)
        self.code, self.message, self.field, self.status = code, message, field, status

    def response(self) -> JSONResponse:
        body = {"code": self.code, "message": self.message, "field": self.field}
        return JSONResponse(body, status_code=self.status)


# ------------------------------------------------------------------ JSON


class _Bad:
    """A number the parser hooks refused, found again (with its path) by the walk."""

    def __init__(self, code: str, text: str) -> None:
        self.code, self.text = code, text


def _parse_constant(text: str) -> _Bad:
    return _Bad("non_finite_number", text)


def _parse_float(text: str) -> float | _Bad:
    value = float(text)
    return value if math.isfinite(value) else _Bad("non_finite_number", text)


def _parse_int(text: str) -> int | _Bad:
    digits = text.lstrip("-")
    if len(digits) > 19:
        return _Bad("number_out_of_range", text[:40])
    value = int(text)
    return value if -INT64_MAX - 1 <= value <= INT64_MAX else _Bad("number_out_of_range", text)


def json_depth(text: str) -> int:
    """The deepest nesting of ``[``/``{`` in a JSON text, by a flat scan
    (strings removed first, so brackets inside them do not count)."""
    depth = deepest = 0
    for match in _BRACKET.finditer(_STRING.sub("", text)):
        if match.group() in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def _has_surrogate(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _walk(document: Any) -> None:
    """Refuse the first surrogate or refused number, naming its path."""
    stack: list[tuple[Any, str]] = [(document, "body")]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if _has_surrogate(value):
                raise Refusal(
                    "unpaired_surrogate", f"{path}: contains an unpaired UTF-16 surrogate", path
                )
        elif isinstance(value, _Bad):
            what = (
                "is not a finite number"
                if value.code == "non_finite_number"
                else "is an integer outside the signed 64-bit range"
            )
            raise Refusal(value.code, f"{path}: {value.text[:40]} {what}", path)
        elif isinstance(value, dict):
            for key, item in value.items():
                if _has_surrogate(key):
                    raise Refusal(
                        "unpaired_surrogate",
                        f"{path}: a key contains an unpaired UTF-16 surrogate",
                        path,
                    )
                stack.append((item, f"{path}.{key}"))
        elif isinstance(value, list):
            stack.extend((item, f"{path}.{i}") for i, item in enumerate(value))


def _sizes(document: Any, limits: Limits) -> None:
    if not isinstance(document, dict):
        return
    for key, value in document.items():
        cap = (
            limits.max_form_bytes
            if key in FORM_MEMBERS
            else limits.max_definition_bytes
            if key in DEFINITION_MEMBERS
            else None
        )
        if cap is None or value is None:
            continue
        size = len(value.encode()) if isinstance(value, str) else len(json.dumps(value))
        if size > cap:
            raise Refusal(
                "value_too_large", f"body.{key}: {size} bytes, over the cap of {cap}", f"body.{key}"
            )


def check_json(raw: bytes, limits: Limits) -> Any:
    """The parsed document, or :class:`Refusal` for hostile JSON."""
    try:
        text = raw.decode(json.detect_encoding(raw))
    except (UnicodeDecodeError, LookupError):
        raise Refusal("validation_error", "body: the body is not valid UTF-8", "body") from None
    if json_depth(text) > limits.max_json_depth:
        raise Refusal(
            "nesting_too_deep",
            f"the body nests deeper than {limits.max_json_depth} levels",
            "body",
        )
    try:
        document = json.loads(
            text,
            parse_constant=_parse_constant,
            parse_float=_parse_float,
            parse_int=_parse_int,
        )
    except (ValueError, RecursionError) as exc:
        where = f" at position {exc.pos}" if isinstance(exc, json.JSONDecodeError) else ""
        raise Refusal("validation_error", f"body: JSON decode error{where}", "body") from None
    _walk(document)
    _sizes(document, limits)
    return document


def is_json(content_type: str | None) -> bool:
    if not content_type:
        return True
    media = content_type.split(";", 1)[0].strip().lower()
    return media == "application/json" or (
        media.startswith("application/") and media.endswith("+json")
    )


# ------------------------------------------------------------ parameters


def check_query(query_string: bytes) -> None:
    for name, value in parse_qsl(query_string.decode("latin-1"), keep_blank_values=True):
        if "\x00" in name or "\x00" in value:
            field = f"query.{name.replace(chr(0), '')}"
            raise Refusal("nul_character", f"{field}: must not contain NUL characters", field)


def path_patterns(templates: Iterable[str]) -> list[re.Pattern[str]]:
    """One regex per path template (``/x/{id}`` → a named group ``id``)."""
    return [compile_path(template)[0] for template in templates]


def check_path(path: str, patterns: Iterable[re.Pattern[str]]) -> None:
    if "\x00" not in path:
        return
    field = "path"
    for pattern in patterns:
        match = pattern.match(path)
        names = [k for k, v in (match.groupdict() if match else {}).items() if "\x00" in v]
        if names:
            field = f"path.{names[0]}"
            break
    raise Refusal("nul_character", f"{field}: must not contain NUL characters", field)


# ------------------------------------------------------------ middleware


class InputGuardMiddleware:
    """See the module docstring. ``paths`` gives the path templates (the
    OpenAPI document's), read once, to name a path parameter."""

    def __init__(
        self,
        app: ASGIApp,
        settings: Callable[[], Settings],
        paths: Callable[[], Iterable[str]] = lambda: (),
        limits: Limits | None = None,
    ) -> None:
        self.app = app
        self.paths = paths
        self.limits = limits
        self.settings = settings
        self._patterns: list[re.Pattern[str]] | None = None

    def patterns(self) -> list[re.Pattern[str]]:
        if self._patterns is None:
            self._patterns = path_patterns(self.paths())
        return self._patterns

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limits = self.limits or Limits.from_settings(self.settings())
        scope.setdefault("state", {})  # shared by the route's copies of the scope
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        content_type = headers.get("content-type")
        multipart = (content_type or "").lower().startswith("multipart/")
        cap = limits.max_upload_bytes if multipart else limits.max_json_body_bytes
        try:
            check_query(scope.get("query_string", b""))
            check_path(scope.get("path", ""), self.patterns())
            declared = headers.get("content-length", "")
            if declared.isascii() and declared.isdigit() and int(declared) > cap:
                raise _too_large(cap)
            if multipart or scope.get("method") in ("GET", "HEAD", "OPTIONS"):
                await self.app(scope, _capped(receive, cap), send)
                return
            raw = await _read(receive, cap)
        except Refusal as refusal:
            await refusal.response()(scope, receive, send)
            return
        await self.app(scope, _replay(raw, receive), send)


def _too_large(cap: int) -> Refusal:
    return Refusal("payload_too_large", f"the body is larger than {cap} bytes", "body", 413)


async def _read(receive: Receive, cap: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] != "http.request":
            break
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > cap:
            raise _too_large(cap)
        chunks.append(chunk)
        if not message.get("more_body", False):
            break
    return b"".join(chunks)


def _replay(raw: bytes, receive: Receive) -> Receive:
    """The body already read, then the client's own messages (its disconnect)."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": raw, "more_body": False}
        return await receive()

    return replay


def _capped(receive: Receive, cap: int) -> Receive:
    """A receive that stops a streamed (uncounted) body at ``cap``."""
    size = 0

    async def capped() -> Message:
        nonlocal size
        message = await receive()
        if message["type"] == "http.request":
            size += len(message.get("body", b""))
            if size > cap:
                raise HTTPException(413, f"the body is larger than {cap} bytes")
        return message

    return capped
