"""The spans flowledger starts itself (docs/telemetry.md names them):

- ``engine.step`` — one engine step, from its instance lock to its
  transaction's commit: a child of the current span when that is in the
  instance's trace (an API request, a job attempt), else a root span in the
  instance's trace linked to the current one. It carries the step's
  engine-trace events (``node_entered`` …) and the instance's end.
- ``job.dispatch`` — a job the step enqueued (zero length, producer); its
  span id comes from the job's ``operationKey``, which the step names.
- ``job.attempt`` — one attempt of a job in a worker (consumer), whose
  parent is its dispatch span; status and error from the attempt's outcome.
- the outbound call's client span (``POST`` …), whose context goes to the
  receiver as the W3C ``traceparent`` header.

Every hook returns at once (None, or a shared no-op object) while tracing is off."""

from __future__ import annotations

import uuid
from collections.abc import MutableMapping
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol

from opentelemetry import context as otel_context
from opentelemetry import propagate, trace
from opentelemetry.trace import Link, NonRecordingSpan, SpanContext, SpanKind, Status, StatusCode

from flowledger.telemetry.ids import dispatch_span_id, forced, otel_trace_id
from flowledger.telemetry.setup import STATE

_SAMPLED = trace.TraceFlags(trace.TraceFlags.SAMPLED)
_EMPTY = otel_context.Context()
# the key a step's spans are ended under, in its transaction's pre-commit buffers
STEP_SPANS = "telemetry_step_spans"
# outcome kinds that are failures of the attempt
_FAILED = frozenset({"retry", "dead", "unconfirmed"})


class StepSpans:
    """The open step spans of one transaction, ended just before it commits
    (a :class:`~flowledger.db.database.PreCommit`). A step whose transaction
    rolls back is not exported: it did not happen."""

    def __init__(self) -> None:
        self.spans: list[trace.Span] = []

    async def flush(self) -> None:
        spans, self.spans = self.spans, []
        for span in spans:
            span.end()


def step_span(
    trace_id: str,
    instance_id: int,
    definition_key: str,
    *,
    job_id: int | None,
    commit: MutableMapping[str, Any] | None,
) -> trace.Span | None:
    """Start the span of a step on instance ``instance_id`` (None: tracing is
    off). ``commit``: the transaction's pre-commit buffers, where the span
    is ended at the commit (None: ended at once, a step writing outside a
    transaction)."""
    tracer = STATE.tracer
    if tracer is None:
        return None
    attributes: dict[str, Any] = {
        "workflow.instance_id": instance_id,
        "workflow.definition_key": definition_key,
        "flowledger.trace_id": trace_id,
    }
    if job_id is not None:
        attributes["job.id"] = job_id
    wanted = otel_trace_id(trace_id)
    current = trace.get_current_span().get_span_context()
    if current.is_valid and current.trace_id == wanted:
        span = tracer.start_span("engine.step", attributes=attributes)
    else:
        with forced(trace_id=wanted):
            span = tracer.start_span(
                "engine.step",
                context=_EMPTY,
                links=[Link(current)] if current.is_valid else None,
                attributes=attributes,
            )
    if commit is None:
        span.end()
        return span
    held = commit.get(STEP_SPANS)
    if held is None:
        held = commit[STEP_SPANS] = StepSpans()
    held.spans.append(span)
    return span


def dispatch_key(
    step: trace.Span | None, job_type: str, *, instance_id: int | None, node_key: str | None
) -> str | None:
    """The ``operationKey`` of a job a traced step enqueues, with its
    ``job.dispatch`` span recorded under that key's span id (None: the step
    is not traced; the ledger draws the key)."""
    tracer = STATE.tracer
    if step is None or tracer is None:
        return None
    key = uuid.uuid4().hex
    attributes: dict[str, Any] = {"job.type": job_type}
    if instance_id is not None:
        attributes["workflow.instance_id"] = instance_id
    if node_key is not None:
        attributes["workflow.node_id"] = node_key
    with forced(span_id=dispatch_span_id(key)):
        span = tracer.start_span(
            f"job.dispatch {job_type}",
            context=trace.set_span_in_context(step),
            kind=SpanKind.PRODUCER,
            attributes=attributes,
        )
    span.end()
    return key


class AttemptJob(Protocol):
    """What an attempt span reads of a claimed job
    (:class:`~flowledger.ledger.models.ClaimedJob`)."""

    @property
    def id(self) -> int: ...
    @property
    def type(self) -> str: ...
    @property
    def attempt(self) -> int: ...
    @property
    def generation(self) -> int: ...
    @property
    def trace_id(self) -> str: ...
    @property
    def operation_key(self) -> str: ...
    @property
    def instance_id(self) -> int | None: ...
    @property
    def node_key(self) -> str | None: ...


class AttemptOutcome(Protocol):
    """What an attempt span reads of an :class:`~flowledger.ledger.models.Outcome`."""

    @property
    def kind(self) -> str: ...
    @property
    def error(self) -> str | None: ...
    @property
    def error_code(self) -> str | None: ...


@dataclass(frozen=True, slots=True)
class NoAttempt:
    """The attempt while tracing is off: does nothing."""

    def __enter__(self) -> NoAttempt:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def ended(self, outcome: AttemptOutcome | None) -> None:
        return None


NO_ATTEMPT = NoAttempt()


class Attempt:
    """A ``job.attempt`` span, current while the handler runs."""

    __slots__ = ("span", "token")

    def __init__(self, span: trace.Span) -> None:
        self.span = span
        self.token: object | None = None

    def __enter__(self) -> Attempt:
        self.token = otel_context.attach(trace.set_span_in_context(self.span))
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self.token is not None:
            otel_context.detach(self.token)  # type: ignore[arg-type]
        if error is not None:
            self.span.record_exception(error)
            self.span.set_status(Status(StatusCode.ERROR, f"{kind.__name__ if kind else ''}"))
        self.span.end()

    def ended(self, outcome: AttemptOutcome | None) -> None:
        """Record how the attempt ended (None: the lease was lost, or the
        attempt settled in its own step)."""
        span = self.span
        if outcome is None:
            span.set_attribute("job.status", "unsettled")
            return
        kind = str(outcome.kind)
        span.set_attribute("job.status", kind)
        if outcome.error is not None:
            span.set_attribute("error", outcome.error)
        if outcome.error_code is not None:
            span.set_attribute("error.type", outcome.error_code)
        if kind in _FAILED:
            span.set_status(Status(StatusCode.ERROR, outcome.error))


def attempt_span(job: AttemptJob, worker_node: str | None) -> Attempt | NoAttempt:
    """The span of one attempt of ``job`` (:data:`NO_ATTEMPT` while tracing
    is off): ``with attempt_span(job, node) as a: …; a.ended(outcome)``."""
    tracer = STATE.tracer
    if tracer is None:
        return NO_ATTEMPT
    parent = SpanContext(
        trace_id=otel_trace_id(job.trace_id),
        span_id=dispatch_span_id(job.operation_key),
        is_remote=True,
        trace_flags=_SAMPLED,
    )
    attributes: dict[str, Any] = {
        "job.id": job.id,
        "job.type": job.type,
        "job.attempt": job.attempt,
        "job.generation": job.generation,
    }
    if job.instance_id is not None:
        attributes["workflow.instance_id"] = job.instance_id
    if job.node_key is not None:
        attributes["workflow.node_id"] = job.node_key
    if worker_node is not None:
        attributes["worker.node"] = worker_node
    span = tracer.start_span(
        f"job.attempt {job.type}",
        context=trace.set_span_in_context(NonRecordingSpan(parent)),
        kind=SpanKind.CONSUMER,
        attributes=attributes,
    )
    return Attempt(span)


@dataclass(frozen=True, slots=True)
class NoClientSpan:
    """The outbound call's span while tracing is off: does nothing."""

    def __enter__(self) -> NoClientSpan:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        return None

    def answered(self, status: int) -> None:
        return None


NO_CLIENT_SPAN = NoClientSpan()


class ClientSpan:
    """An outbound call's client span."""

    __slots__ = ("span",)

    def __init__(self, span: trace.Span) -> None:
        self.span = span

    def __enter__(self) -> ClientSpan:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if error is not None:
            self.span.record_exception(error)
            self.span.set_attribute("error.type", kind.__name__ if kind else "error")
            self.span.set_status(Status(StatusCode.ERROR, str(error)))
        self.span.end()

    def answered(self, status: int) -> None:
        self.span.set_attribute("http.response.status_code", status)
        if status >= 400:
            self.span.set_attribute("error.type", str(status))
            self.span.set_status(Status(StatusCode.ERROR))


def client_span(
    method: str, url: str, host: str, port: int, headers: MutableMapping[str, str]
) -> ClientSpan | NoClientSpan:
    """The client span of one outbound call (:data:`NO_CLIENT_SPAN` while
    tracing is off); its context goes into ``headers`` as ``traceparent``."""
    tracer = STATE.tracer
    if tracer is None:
        return NO_CLIENT_SPAN
    span = tracer.start_span(
        method,
        kind=SpanKind.CLIENT,
        attributes={
            "http.request.method": method,
            "url.full": url.split("?", 1)[0],  # a query may carry credentials
            "server.address": host,
            "server.port": port,
        },
    )
    propagate.inject(headers, context=trace.set_span_in_context(span))
    return ClientSpan(span)
