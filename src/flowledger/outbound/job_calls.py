"""Outbound HTTP calls made from a job (SPEC L-16, L-17).

:func:`call_from_job` sends one :class:`OutboundRequest` through the
caller's :class:`~flowledger.outbound.client.OutboundClient` (the runtime's,
:class:`~flowledger.outbound.resources.Outbound`):

- every call carries ``X-Idempotency-Key: <operationKey>`` (L-16; a value the
  caller set is replaced). It is stable across retries of the same job and
  payload and new after a manual retry with a changed payload.
- an unsafe write — a method other than GET/HEAD/OPTIONS not declared
  ``idempotent=True`` — records the job's side-effect marker after the SSRF
  check and before anything is sent (L-17).

How a call ends (codes are the job's ``last_error_code``):

=============================================  ==============================
2xx                                            :class:`OutboundResult`
3xx (never followed, X-4)                      unsafe write:
                                               :class:`CallUnconfirmed` (a 303
                                               after a POST usually means the
                                               write landed); safe/idempotent:
                                               :class:`RedirectRefused` —
                                               permanent, ``outbound_redirect``
other 4xx (a clear refusal: nothing applied)   :class:`ClearFailure` —
                                               ``http_client_error``
408, 429, 5xx, no response (read timeout,      unsafe write:
reset after sending, protocol error), or the   :class:`CallUnconfirmed` (dead,
job aborted mid-call (lost lease, deadline)    ``external_outcome_unconfirmed``,
                                               never resent); safe/idempotent:
                                               :class:`CallFailed` (retry,
                                               ``outbound_unavailable``,
                                               honouring ``Retry-After``)
not connected (refused, connect timeout) —     :class:`CallFailed` (retry) —
nothing was sent                               also for unsafe writes
a request that cannot be written (a control    :class:`OutboundRequestInvalid`
character in a header, a header the HTTP       (permanent,
library refuses, a body JSON cannot encode) —  ``outbound_request_invalid``:
nothing was sent                               a resend fails the same way)
refused by the SSRF policy                     ``OutboundRefused`` (permanent)
=============================================  ==============================

Header control characters (CR, LF, NUL … — header injection) are refused
before the side-effect marker and before any connection; anything else the
HTTP library refuses while building the request head
(``httpx.LocalProtocolError``) is raised before a byte is written, so it is
"not sent" too. ``Content-Length`` and ``Transfer-Encoding`` are the body's:
values the caller set are dropped, so the declared framing always matches
what is sent.

Decision on the clear 4xx: SPEC L-17 calls it "a normal failure", i.e. the
ordinary settlement path — a failed attempt retried with backoff while the
budget lasts, then ``attempts_exhausted`` — not the L-17 dead letter. The
receiver refused the write, so a resend is safe, and trigger ``onFailure:
retry`` (X-1) depends on it. :class:`ClearFailure` is therefore a
:class:`RetryableError` carrying ``status``; node failure policies may turn it
into a permanent failure later.

Every error carries ``.request`` / ``.response`` records and the latest
exchange is also remembered for the job context, so the executor stores them
on the attempt row whatever the handler does with the error.
"""

from __future__ import annotations

import asyncio
import json
import re
import time
from collections.abc import Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import httpx
import structlog

from flowledger.errors import ExternalOutcomeUnconfirmed, PermanentError, RetryableError
from flowledger.outbound.attempt import CallAttempt
from flowledger.outbound.client import OutboundClient, OutboundResponse
from flowledger.outbound.records import (
    Record,
    Recorded,
    no_response_record,
    remember_exchange,
    request_record,
    response_record,
)
from flowledger.outbound.ssrf import OutboundRefused, ResolutionFailed

log = structlog.get_logger("flowledger.outbound")

T = TypeVar("T")
E = TypeVar("E", bound=Recorded)
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
IDEMPOTENCY_HEADER = "X-Idempotency-Key"
MAX_RETRY_AFTER_MS = 3_600_000
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)
_FRAMING_HEADERS = frozenset({"content-length", "transfer-encoding"})
_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # CTLs but HTAB (RFC 9110 5.5)


@dataclass(frozen=True)
class OutboundRequest:
    """One call. ``body``: bytes as is, str as UTF-8 text, anything else as JSON."""

    method: str
    url: str
    headers: Mapping[str, str] = field(default_factory=dict)
    body: Any = None
    idempotent: bool = False

    @property
    def unsafe(self) -> bool:
        return self.method.upper() not in SAFE_METHODS and not self.idempotent


@dataclass(frozen=True)
class OutboundResult:
    """A 2xx response; ``request``/``response`` are the stored records."""

    status: int
    headers: dict[str, str]
    body: bytes
    request: Record
    response: Record

    def text(self) -> str:
        return self.body.decode("utf-8", errors="replace")

    def json(self) -> Any:
        return json.loads(self.body)


class ClearFailure(Recorded, RetryableError):
    """A clear 4xx (not 408/429): the receiver refused; a normal failure."""

    code = "http_client_error"

    def __init__(self, message: str, *, status: int) -> None:
        super().__init__(message)
        self.status = status


class RedirectRefused(Recorded, PermanentError):
    """A 3xx answer to a safe or idempotent call: redirects are never
    followed (X-4). (A 3xx to an unsafe write is :class:`CallUnconfirmed`.)"""

    code = "outbound_redirect"


class CallFailed(Recorded, RetryableError):
    """A safe call without a usable answer, or any call that was not sent."""

    code = "outbound_unavailable"


class CallUnconfirmed(Recorded, ExternalOutcomeUnconfirmed):
    """An unsafe write whose outcome is unknown (L-17 dead letter)."""


class OutboundRequestInvalid(Recorded, PermanentError):
    """The request cannot be written as given (a header with a control
    character, a header the HTTP library refuses, a body that cannot be
    encoded): nothing was sent, and a resend would fail the same way."""

    code = "outbound_request_invalid"


class _Aborted(Exception):
    pass


def encode_body(body: Any) -> tuple[bytes | None, str | None]:
    """The bytes sent for an :class:`OutboundRequest` body and the
    Content-Type they imply (None: none implied): bytes as is, str as UTF-8
    text, anything else as compact JSON. Raises TypeError / ValueError for a
    value JSON cannot encode."""
    if body is None:
        return None, None
    if isinstance(body, bytes | bytearray):
        return bytes(body), None
    if isinstance(body, str):
        return body.encode(), "text/plain; charset=utf-8"
    text = json.dumps(body, ensure_ascii=False, separators=(",", ":"), default=str)
    return text.encode(), "application/json"


def header_problem(name: str, value: str) -> str | None:
    """Why the header ``name: value`` cannot be sent as is (a control
    character other than HTAB, e.g. CR/LF/NUL: header injection), else None."""
    if not name or _CONTROL.search(name):
        return f"header name {name!r} is empty or contains a control character"
    if _CONTROL.search(value):
        return f"header {name!r} has a value with a control character (CR, LF, NUL …)"
    return None


def _printable(text: str) -> str:
    """``text``, or its repr when it holds a control character (the record
    stays readable, and PostgreSQL JSON cannot store NUL)."""
    return repr(text) if _CONTROL.search(text) else text


def _prepare(ctx: CallAttempt, request: OutboundRequest) -> tuple[httpx.Headers, bytes | None]:
    headers = httpx.Headers(
        {k: v for k, v in request.headers.items() if k.lower() not in _FRAMING_HEADERS}
    )
    headers[IDEMPOTENCY_HEADER] = ctx.idempotency_key
    content, content_type = encode_body(request.body)
    if content_type is not None:
        headers.setdefault("Content-Type", content_type)
    return headers, content


def _retry_after_ms(response: OutboundResponse) -> int | None:
    value = (response.header("retry-after") or "").strip()
    return min(int(value) * 1000, MAX_RETRY_AFTER_MS) if value.isdigit() else None


async def _until_abort(ctx: CallAttempt, coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` unless the job's abort signal fires first."""
    if ctx.aborted:
        coro.close()
        raise _Aborted()
    task = asyncio.ensure_future(coro)
    waiter = asyncio.ensure_future(ctx.abort.wait())
    try:
        await asyncio.wait({task, waiter}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        waiter.cancel()
        if not task.done():
            task.cancel()
            await asyncio.gather(task, return_exceptions=True)
    if task.cancelled():
        raise _Aborted()
    return task.result()


def _fail(error: E, request: Record, response: Record | None) -> E:
    error.request, error.response = request, response
    return error


async def call_from_job(
    ctx: CallAttempt, request: OutboundRequest, *, client: OutboundClient
) -> OutboundResult:
    """Send ``request`` through ``client`` on behalf of the job of ``ctx``;
    see the module docstring."""
    method = request.method.upper()
    try:
        headers, content = _prepare(ctx, request)
    except (TypeError, ValueError) as exc:
        raise OutboundRequestInvalid(f"cannot encode the outbound request: {exc}") from None
    limit = client.max_body_bytes
    shown = [(_printable(k), _printable(v)) for k, v in headers.multi_items()]
    req = request_record(method, request.url, shown, content, limit=limit)
    remember_exchange(ctx, req, None)
    problem = next(filter(None, (header_problem(k, v) for k, v in request.headers.items())), None)
    if problem is not None:  # before the marker and before any connection
        raise _fail(OutboundRequestInvalid(f"{method} {req['url']} not sent: {problem}"), req, None)
    try:
        checked = await client.check(request.url)
    except (OutboundRefused, ResolutionFailed) as exc:
        raise _fail(exc, req, None) from None
    req["address"] = str(checked.address)
    if ctx.aborted:
        raise _fail(CallFailed(f"{method} {req['url']} not sent: the job was aborted"), req, None)
    if request.unsafe:
        await ctx.mark_side_effect()
    started = time.monotonic()
    send = client.send_checked(checked, method, headers=headers, content=content)
    try:
        response = await _until_abort(ctx, send)
    except asyncio.CancelledError:
        elapsed = int((time.monotonic() - started) * 1000)
        remember_exchange(ctx, req, no_response_record("cancelled", duration_ms=elapsed))
        raise
    except (httpx.RequestError, _Aborted) as exc:
        elapsed = int((time.monotonic() - started) * 1000)
        if isinstance(exc, _Aborted):
            what = f"the job was aborted during the call ({ctx.abort_reason})"
        else:
            what = f"{type(exc).__name__}: {exc}".rstrip(": ")
        resp = no_response_record(what, duration_ms=elapsed)
        remember_exchange(ctx, req, resp)
        log.info("outbound_call", job_id=ctx.job.id, method=method, url=req["url"], error=what)
        if isinstance(exc, httpx.LocalProtocolError):  # refused while building the head
            message = f"{method} {req['url']} was not sent: the request is invalid ({what})"
            raise _fail(OutboundRequestInvalid(message), req, resp) from None
        if isinstance(exc, _NOT_SENT):
            message = f"{method} {req['url']} was not sent: {what}"
            raise _fail(CallFailed(message), req, resp) from None
        message = f"{method} {req['url']}: no response ({what})"
        error = CallUnconfirmed(message) if request.unsafe else CallFailed(message)
        raise _fail(error, req, resp) from None
    resp = response_record(
        response.status,
        response.headers,
        response.body,
        limit=limit,
        duration_ms=response.duration_ms,
        complete=response.complete,
    )
    remember_exchange(ctx, req, resp)
    log.info(
        "outbound_call",
        job_id=ctx.job.id,
        method=method,
        url=req["url"],
        status=response.status,
        duration_ms=response.duration_ms,
    )
    return _classify(request, response, req, resp)


def _classify(
    request: OutboundRequest, response: OutboundResponse, req: Record, resp: Record
) -> OutboundResult:
    status = response.status
    said = f"{req['method']} {req['url']} answered {status}"
    if 200 <= status < 300:
        headers = {k.lower(): v for k, v in response.headers}
        return OutboundResult(status, headers, response.body, req, resp)
    if 300 <= status < 400:
        location = response.header("location")
        message = f"{said} (Location: {location!r}); redirects are not followed"
        if request.unsafe:  # e.g. 303 See Other after a POST: the write has likely landed
            message += "; the write may have taken effect"
            raise _fail(CallUnconfirmed(message), req, resp)
        raise _fail(RedirectRefused(message), req, resp)
    if 400 <= status < 500 and status not in (408, 429):
        raise _fail(ClearFailure(said, status=status), req, resp)
    if request.unsafe:
        raise _fail(CallUnconfirmed(f"{said}; the write may have taken effect"), req, resp)
    raise _fail(CallFailed(said, next_retry_delay_ms=_retry_after_ms(response)), req, resp)
