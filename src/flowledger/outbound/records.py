"""What an outbound call leaves on the attempt row (SPEC X-1, X-4).

:func:`request_record` and :func:`response_record` build the JSON stored in
``workflow_job_executions.request`` / ``.response``: method, URL (secret query
parameters masked), headers with secrets replaced by ``[redacted]``, the body
decoded as UTF-8 (undecodable bytes replaced) and cut at the configured size
with a visible marker, the status and the duration. A call that got no
response records ``status: null`` and the error instead.

Secret headers (the rule is :mod:`flowledger.definitions.secret_names`):
``Authorization``, ``Proxy-Authorization``, ``Cookie``, ``Set-Cookie``,
``X-Api-Key``, ``Api-Key`` and any header whose name contains ``secret``,
``token``, ``password``, ``passwd``, ``apikey``, ``api-key``, ``api_key``,
``session``, ``credential`` or ``signature`` (an HMAC signature such as
``X-Flowledger-Signature`` lets anyone who reads it replay the signed
request). ``X-Idempotency-Key`` is kept: it is an identifier, not a secret.
Inside :func:`redacting` (a context manager; connectors use it for an API-key
header of any name, automation rules for their secret headers) further header
names are redacted too.

The records are remembered on the job context (``JobContext.exchange``) and
carried by the raised errors (``.request`` / ``.response``); the worker's
executor reads either and stores them on the attempt row.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from flowledger.definitions.secret_names import SECRET_HEADERS as SECRET_HEADERS
from flowledger.definitions.secret_names import SECRET_PARTS as SECRET_PARTS
from flowledger.definitions.secret_names import is_secret as is_secret

REDACTED = "[redacted]"
_SECRET_PARAMS = frozenset({"key", "sig", "signature", "auth", "code"})
_QUERY_PARAM = re.compile(r"([?&])([^=&#]*)=([^&#]*)")

Record = dict[str, Any]
Headers = Mapping[str, str] | Iterable[tuple[str, str]]

_EXTRA_SECRET_HEADERS: ContextVar[frozenset[str]] = ContextVar(
    "flowledger_extra_secret_headers", default=frozenset()
)


class Recorded(Exception):
    """Mixin for outbound errors: the request and response records of the
    call (None when there is none), for the executor to store on the attempt."""

    request: Record | None = None
    response: Record | None = None


@contextmanager
def redacting(names: Iterable[str]) -> Iterator[None]:
    """Within the block (the current task and what it awaits), also redact
    the headers named ``names`` (case-insensitive) in every record built."""
    extra = _EXTRA_SECRET_HEADERS.get() | {n.strip().lower() for n in names}
    token = _EXTRA_SECRET_HEADERS.set(frozenset(extra))
    try:
        yield
    finally:
        _EXTRA_SECRET_HEADERS.reset(token)


def redact_headers(headers: Headers) -> dict[str, str]:
    """Headers as a dict (repeated names joined with ``, ``), secrets redacted."""
    items = headers.items() if isinstance(headers, Mapping) else headers
    extra = _EXTRA_SECRET_HEADERS.get()
    out: dict[str, str] = {}
    for name, value in items:
        key = name.lower()
        shown = REDACTED if is_secret(key) or key in extra else value
        out[key] = f"{out[key]}, {shown}" if key in out else shown
    return out


def redact_url(url: str) -> str:
    """``url`` with the values of secret-looking query parameters masked."""

    def mask(match: re.Match[str]) -> str:
        sep, name, value = match.groups()
        secret = is_secret(name) or name.lower() in _SECRET_PARAMS
        return f"{sep}{name}={REDACTED if secret and value else value}"

    return _QUERY_PARAM.sub(mask, url)


def body_record(body: bytes | None, limit: int) -> Record:
    """The body as text, cut at ``limit`` bytes with a marker saying so."""
    if body is None:
        return {"body": None, "body_bytes": 0, "body_truncated": False}
    size = len(body)
    truncated = size > limit
    text = body[:limit].decode("utf-8", errors="replace")
    if truncated:
        text += f"…[truncated: {size} bytes, first {limit} kept]"
    return {"body": text, "body_bytes": size, "body_truncated": truncated}


def request_record(
    method: str, url: str, headers: Headers, body: bytes | None, *, limit: int
) -> Record:
    """The stored form of an outbound request."""
    return {
        "method": method.upper(),
        "url": redact_url(url),
        "headers": redact_headers(headers),
        **body_record(body, limit),
    }


def response_record(
    status: int,
    headers: Headers,
    body: bytes,
    *,
    limit: int,
    duration_ms: int,
    complete: bool = True,
) -> Record:
    """The stored form of a response; ``complete`` is False when reading the
    body stopped early (size cap or a transport error after the status)."""
    record: Record = {
        "status": status,
        "headers": redact_headers(headers),
        **body_record(body, limit),
        "duration_ms": duration_ms,
    }
    if not complete:
        record["body_complete"] = False
    return record


def no_response_record(error: str, *, duration_ms: int) -> Record:
    """The stored form of a call that got no response."""
    return {"status": None, "error": error, "duration_ms": duration_ms}


# ------------------------------------------------------------ per-job memory


def remember_exchange(ctx: Any, request: Record | None, response: Record | None) -> None:
    """Remember the latest exchange made on behalf of a job context; the
    worker's executor puts it on the attempt row."""
    ctx.record_exchange(request, response)


def recorded_exchange(ctx: Any) -> tuple[Record | None, Record | None]:
    """The latest exchange remembered for a job context (``(None, None)`` if none)."""
    exchange: tuple[Record | None, Record | None] = ctx.exchange
    return exchange
