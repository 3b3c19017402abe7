"""A real OTLP/HTTP trace receiver for the tests: a threaded HTTP server on
127.0.0.1 that accepts ``POST /v1/traces`` (protobuf, plain or gzip),
decodes each ``ExportTraceServiceRequest`` with opentelemetry-proto and
keeps its spans as :class:`~tests.telemetry.approval_path.SpanRow` (with the
``service.name`` of the resource that sent them)."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from tests.telemetry.approval_path import SpanRow


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    return None if which is None else getattr(value, which)


def _attributes(pairs: Any) -> dict[str, Any]:
    found: dict[str, Any] = {}
    pair: KeyValue
    for pair in pairs:
        found[pair.key] = _value(pair.value)
    return found


def _row(span: Span) -> SpanRow:
    return SpanRow(
        name=span.name,
        kind=Span.SpanKind.Name(span.kind).removeprefix("SPAN_KIND_"),
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_id=span.parent_span_id.hex() or None,
        attributes=_attributes(span.attributes),
        events=[e.name for e in span.events],
        status=Status.StatusCode.Name(span.status.code).removeprefix("STATUS_CODE_"),
    )


class OtlpReceiver:
    """The spans received so far (``spans``) and the services that sent them."""

    def __init__(self) -> None:
        self.spans: list[SpanRow] = []
        self.services: set[str] = set()
        self.requests = 0
        self._lock = threading.Lock()
        self.port = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def take(self, body: bytes) -> None:
        request = ExportTraceServiceRequest.FromString(body)
        with self._lock:
            self.requests += 1
            for resource_spans in request.resource_spans:
                resource = _attributes(resource_spans.resource.attributes)
                self.services.add(str(resource.get("service.name")))
                for scope_spans in resource_spans.scope_spans:
                    self.spans.extend(_row(s) for s in scope_spans.spans)

    def snapshot(self) -> list[SpanRow]:
        with self._lock:
            return list(self.spans)


@contextmanager
def otlp_receiver() -> Iterator[OtlpReceiver]:
    receiver = OtlpReceiver()

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
            if self.headers.get("Content-Encoding") == "gzip":
                body = gzip.decompress(body)
            if self.path != "/v1/traces":
                self.send_response(404)
                self.end_headers()
                return
            receiver.take(body)
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver.port = server.server_address[1]
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)
