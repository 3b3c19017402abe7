"""How flowledger's ids become OpenTelemetry ids.

- A ``traceId`` (32 hex digits: :func:`~flowledger.ledger.models.new_key`,
  or a trace id adopted at an instance's start) *is* the 128-bit trace id;
  any other ``traceId`` maps to the first 16 bytes of its SHA-256.
- A job's dispatch span has the span id named by the job's
  ``operationKey`` (its first 16 hex digits, or its SHA-256), so an attempt
  on any worker finds its parent from the job row alone.

:class:`KeyedIds` is the tracer provider's id generator: random ids, unless
:func:`forced` names the trace id (a step span rooted in its instance's
trace) or the span id (a dispatch span) of the span started inside it."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

_TRACE: ContextVar[int | None] = ContextVar("flowledger_otel_trace", default=None)
_SPAN: ContextVar[int | None] = ContextVar("flowledger_otel_span", default=None)


def _hex_or_hash(key: str, digits: int) -> int:
    if len(key) >= digits:
        try:
            value = int(key[:digits], 16)
        except ValueError:
            value = 0
        if value:
            return value
    digest = hashlib.sha256(key.encode()).digest()[: digits // 2]
    return int.from_bytes(digest, "big") or 1


def otel_trace_id(trace_id: str) -> int:
    """The 128-bit trace id of flowledger ``traceId``."""
    if len(trace_id) != 32:
        return _hex_or_hash(f"traceId:{trace_id}", 32)
    return _hex_or_hash(trace_id, 32)


def dispatch_span_id(operation_key: str) -> int:
    """The 64-bit span id of the dispatch span of the job with ``operation_key``."""
    return _hex_or_hash(operation_key, 16)


def hex_trace_id(trace_id: int) -> str:
    """A trace id as flowledger writes a ``traceId``: 32 lower-case hex digits."""
    return f"{trace_id:032x}"


@contextmanager
def forced(*, trace_id: int | None = None, span_id: int | None = None) -> Iterator[None]:
    """Spans started inside get these ids (a parentless one the trace id)."""
    trace_token = _TRACE.set(trace_id)
    span_token = _SPAN.set(span_id)
    try:
        yield
    finally:
        _SPAN.reset(span_token)
        _TRACE.reset(trace_token)


class KeyedIds(RandomIdGenerator):
    """Random ids, unless :func:`forced` names them."""

    def generate_trace_id(self) -> int:
        wanted = _TRACE.get()
        return wanted if wanted is not None else super().generate_trace_id()

    def generate_span_id(self) -> int:
        wanted = _SPAN.get()
        return wanted if wanted is not None else super().generate_span_id()
