"""OpenTelemetry tracing of flowledger (issue 33 item 1), off unless the
standard ``OTEL_*`` variables ask for it (:mod:`.setup`).

It owns the tracer and the few hooks the rest of flowledger calls: an
engine step's span (:func:`~.spans.step_span`), a job's dispatch
(:func:`~.spans.dispatch_key`), a job attempt's span
(:func:`~.spans.attempt_span`) and an outbound call's client span with the
W3C ``traceparent`` it sends (:func:`~.spans.client_span`). flowledger's
``traceId`` is the OpenTelemetry trace id (:mod:`.ids`), so one instance's
steps, jobs, attempts, calls and callbacks are one trace. API requests get
their server spans from FastAPI's own telemetry (:func:`~.setup.fastapi_config`).
With tracing off every hook answers from one module-level check. It imports
nothing of flowledger (a bottom layer); docs/telemetry.md names the spans."""

from flowledger.telemetry.setup import (
    configure_from_env,
    current_trace_id,
    fastapi_config,
    install,
    tracing_on,
)
from flowledger.telemetry.spans import (
    NO_ATTEMPT,
    NO_CLIENT_SPAN,
    attempt_span,
    client_span,
    dispatch_key,
    step_span,
)

__all__ = [
    "NO_ATTEMPT",
    "NO_CLIENT_SPAN",
    "attempt_span",
    "client_span",
    "configure_from_env",
    "current_trace_id",
    "dispatch_key",
    "fastapi_config",
    "install",
    "step_span",
    "tracing_on",
]
