"""Whether flowledger traces, and with which tracer: decided once per
process from the standard OpenTelemetry variables (or set by a test).

Tracing is on when ``OTEL_TRACES_EXPORTER`` names ``otlp`` or ``console``,
or, with that variable unset, when ``OTEL_EXPORTER_OTLP_ENDPOINT`` or
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` is set; ``OTEL_SDK_DISABLED=true``
or ``OTEL_TRACES_EXPORTER=none`` keeps it off. OTLP goes over HTTP/protobuf
(the exporter reads its own ``OTEL_EXPORTER_OTLP_*`` variables), through a
batch span processor (``OTEL_BSP_*``); the sampler is ``OTEL_TRACES_SAMPLER``'s
and the resource ``OTEL_SERVICE_NAME`` / ``OTEL_RESOURCE_ATTRIBUTES``
(``service.name`` defaults to ``flowledger``).

Off, :data:`STATE` holds no tracer and every hook returns at its first line."""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import structlog
from opentelemetry import trace
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, ConsoleSpanExporter, SpanExporter

from flowledger.telemetry.ids import KeyedIds, hex_trace_id

if TYPE_CHECKING:
    from fastapi.telemetry import TelemetryConfig

log = structlog.get_logger("flowledger.telemetry")

TRACER_NAME = "flowledger"


@dataclass
class TracingState:
    """The process's tracer (None: tracing is off) and its provider."""

    tracer: trace.Tracer | None = None
    provider: TracerProvider | None = None
    decided: bool = False


STATE = TracingState()


def tracing_on() -> bool:
    return STATE.tracer is not None


def new_provider(resource: Resource | None = None) -> TracerProvider:
    """A tracer provider with flowledger's id generator (:class:`~.ids.KeyedIds`)."""
    return TracerProvider(resource=resource or _resource(), id_generator=KeyedIds())


def install(provider: TracerProvider | None) -> None:
    """Trace with ``provider`` from now on (None: stop tracing). The process
    settings then no longer decide (:func:`configure_from_env`)."""
    STATE.provider = provider
    STATE.tracer = None if provider is None else provider.get_tracer(TRACER_NAME)
    STATE.decided = True


def _exporters(env: dict[str, str] | os._Environ[str]) -> list[SpanExporter]:
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return []
    names = [n.strip().lower() for n in env.get("OTEL_TRACES_EXPORTER", "").split(",")]
    names = [n for n in names if n]
    if not names:
        endpoint = env.get("OTEL_EXPORTER_OTLP_ENDPOINT") or env.get(
            "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
        )
        names = ["otlp"] if endpoint else []
    exporters: list[SpanExporter] = []
    for name in names:
        if name == "otlp":
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

            exporters.append(OTLPSpanExporter())
        elif name == "console":
            exporters.append(ConsoleSpanExporter())
        elif name != "none":
            log.warning("otel_exporter_unknown", exporter=name)
    return exporters


def _resource() -> Resource:
    named = os.environ.get("OTEL_SERVICE_NAME") or "service.name=" in os.environ.get(
        "OTEL_RESOURCE_ATTRIBUTES", ""
    )
    return Resource.create({} if named else {"service.name": TRACER_NAME})


def configure_from_env() -> bool:
    """Decide once per process from the ``OTEL_*`` variables (see the
    module docstring) whether to trace; True when tracing is on. A provider
    set up here is also the global one (other instrumentation joins it) and
    is flushed at the process's exit."""
    if STATE.decided:
        return tracing_on()
    STATE.decided = True
    exporters = _exporters(os.environ)
    if not exporters:
        return False
    provider = new_provider()
    for exporter in exporters:
        provider.add_span_processor(BatchSpanProcessor(exporter))
    trace.set_tracer_provider(provider)
    install(provider)
    log.info("otel_tracing_on", exporters=[type(e).__name__ for e in exporters])
    return True


def current_trace_id() -> str | None:
    """The trace id of the current span as a ``traceId`` (None: tracing is
    off or no span is current) — what an instance started now adopts."""
    if STATE.tracer is None:
        return None
    context = trace.get_current_span().get_span_context()
    return hex_trace_id(context.trace_id) if context.is_valid else None


def fastapi_config() -> TelemetryConfig:
    """``FastAPI(telemetry=…)``: server spans for API requests (continuing an
    incoming ``traceparent``) from FastAPI's own telemetry, with this
    module's provider; its metrics, logs and per-operation spans stay off."""
    return {
        "tracing": STATE.provider is not None,
        "tracer_provider": STATE.provider,
        "metrics": False,
        "logs": False,
        "operation_spans": False,
        "auto_configure": False,
    }
