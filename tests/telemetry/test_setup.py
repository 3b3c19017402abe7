"""When tracing is on (the standard ``OTEL_*`` variables only) and how
flowledger's ids become OpenTelemetry ids (issue 33 item 1). No storage."""

from __future__ import annotations

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import ConsoleSpanExporter

from flowledger.ledger.models import new_key
from flowledger.telemetry import (
    NO_ATTEMPT,
    NO_CLIENT_SPAN,
    attempt_span,
    client_span,
    current_trace_id,
    dispatch_key,
    step_span,
    tracing_on,
)
from flowledger.telemetry.ids import dispatch_span_id, otel_trace_id
from flowledger.telemetry.setup import _exporters


@pytest.mark.parametrize(
    ("env", "exported"),
    [
        ({}, []),
        ({"OTEL_SERVICE_NAME": "x"}, []),
        ({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, [OTLPSpanExporter]),
        ({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://h/v1/traces"}, [OTLPSpanExporter]),
        ({"OTEL_TRACES_EXPORTER": "otlp"}, [OTLPSpanExporter]),
        ({"OTEL_TRACES_EXPORTER": "console, otlp"}, [ConsoleSpanExporter, OTLPSpanExporter]),
        ({"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://h"}, []),
        ({"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://h"}, []),
        ({"OTEL_TRACES_EXPORTER": "zipkin"}, []),  # not installed: warned, off
    ],
)
def test_only_the_standard_variables_turn_tracing_on(
    env: dict[str, str], exported: list[type]
) -> None:
    assert [type(e) for e in _exporters(env)] == exported


def test_a_trace_id_is_the_otel_trace_id() -> None:
    key = new_key()
    assert otel_trace_id(key) == int(key, 16)
    # any other traceId (a caller's, an old one) maps to a stable 128-bit id
    assert otel_trace_id("order-4711") == otel_trace_id("order-4711") != 0
    assert otel_trace_id("order-4711") < 2**128
    assert otel_trace_id("0" * 32) != 0  # an invalid trace id is never used
    assert dispatch_span_id(key) == int(key[:16], 16)
    assert 0 < dispatch_span_id("not-hex") < 2**64


def test_tracing_off_every_hook_answers_at_once() -> None:
    assert not tracing_on()
    assert current_trace_id() is None
    assert step_span(new_key(), 1, "k", job_id=None, commit={}) is None
    assert dispatch_key(None, "t", instance_id=1, node_key="n") is None
    assert attempt_span(object(), "node") is NO_ATTEMPT  # type: ignore[arg-type]
    headers: dict[str, str] = {}
    assert client_span("POST", "http://h/p", "h", 80, headers) is NO_CLIENT_SPAN
    assert headers == {}
