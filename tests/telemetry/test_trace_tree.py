"""One approval's whole path is one OpenTelemetry trace (issue 33 item 1),
on both backends, with the SDK's in-memory exporter: an API request that
carries a ``traceparent`` starts the instance (the instance adopts that
trace as its traceId), a real worker loop runs the external approval's
dispatch job, whose POST to a receiver on 127.0.0.1 carries the
``traceparent`` of its client span; the partner's signed callback carries
that context back, and the step it wakes ends the instance — every span in
one tree under the caller's span (:func:`tests.telemetry.approval_path.check_tree`).
Also: tracing off, nothing is recorded and no ``traceparent`` is sent."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import httpx
import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from sqlalchemy import select

from flowledger.api import create_app
from flowledger.api.auth import create_user, issue_token
from flowledger.api.permissions import ALL_PERMISSIONS
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs
from flowledger.runtime import Runtime
from flowledger.settings import Settings
from flowledger.telemetry import install, tracing_on
from flowledger.telemetry.setup import new_provider
from tests.outbound import conftest as outbound_fixtures
from tests.outbound.receivers import Receiver
from tests.runtime_support import runtime_for
from tests.telemetry.approval_path import SECRET, SpanRow, Walked, check_tree, walk_approval

receiver = outbound_fixtures.receiver
other_receiver = outbound_fixtures.other_receiver
outbound_env = outbound_fixtures.outbound_env


@pytest.fixture
def exporter() -> Iterator[InMemorySpanExporter]:
    """Tracing on, into memory, for this test only."""
    spans = InMemorySpanExporter()
    provider = new_provider()
    provider.add_span_processor(SimpleSpanProcessor(spans))
    install(provider)
    try:
        yield spans
    finally:
        install(None)
        provider.shutdown()


@pytest.fixture
def settings(monkeypatch: pytest.MonkeyPatch, outbound_env: Settings) -> Settings:
    monkeypatch.setenv("FLOWLEDGER_CALLBACK_SECRET", SECRET)
    monkeypatch.setenv("FLOWLEDGER_POLL_INTERVAL_S", "0.2")
    return outbound_env


async def admin_headers(runtime: Runtime) -> dict[str, str]:
    async with runtime.db.begin() as conn:
        now = runtime.clock.now()
        await create_user(
            conn, "root", roles=(), permissions=ALL_PERMISSIONS, tenants=["*"], now=now
        )
        token = await issue_token(conn, "root", now=now)
    return {"Authorization": f"Bearer {token}"}


async def walk_with_worker(db: Database, receiver: Receiver) -> Walked:
    """The approval through the API (in process) and a real worker loop."""
    runtime = runtime_for(db)  # the system clock: the worker runs in real time
    client = httpx.AsyncClient(
        transport=httpx.ASGITransport(app=create_app(runtime)), base_url="http://testserver"
    )
    stop = asyncio.Event()
    worker = runtime.worker(maintenance=False)
    running = asyncio.ensure_future(worker.run(stop))
    try:
        await asyncio.wait_for(worker.started.wait(), 10)
        return await walk_approval(client, await admin_headers(runtime), receiver)
    finally:
        stop.set()
        await asyncio.wait_for(running, 30)
        await client.aclose()
        await runtime.aclose()


async def operation_key(db: Database, instance_id: int) -> str:
    async with db.read() as conn:
        found = await conn.execute(
            select(workflow_jobs.c.operation_key).where(
                workflow_jobs.c.instance_id == instance_id,
                workflow_jobs.c.type == "external_dispatch",
            )
        )
        return str(found.scalar_one())


def row(span: ReadableSpan) -> SpanRow:
    context = span.get_span_context()
    assert context is not None
    return SpanRow(
        name=span.name,
        kind=span.kind.name,
        trace_id=f"{context.trace_id:032x}",
        span_id=f"{context.span_id:016x}",
        parent_id=f"{span.parent.span_id:016x}" if span.parent is not None else None,
        attributes=dict(span.attributes or {}),
        events=[e.name for e in span.events],
        status=span.status.status_code.name,
    )


async def test_one_approval_is_one_trace_in_memory(
    db: Database, receiver: Receiver, settings: Settings, exporter: InMemorySpanExporter
) -> None:
    walked = await walk_with_worker(db, receiver)
    spans = [row(s) for s in exporter.get_finished_spans()]
    check_tree(spans, walked, await operation_key(db, walked.instance_id))


async def test_tracing_off_records_and_sends_nothing(
    db: Database, receiver: Receiver, settings: Settings
) -> None:
    assert not tracing_on()
    walked = await walk_with_worker(db, receiver)
    (received,) = receiver.requests
    assert "traceparent" not in received.headers
    # the instance keeps a traceId of its own, not the caller's
    assert walked.trace_id != "4bf92f3577b34da6a3ce929d0e0e4736"
    assert len(walked.trace_id) == 32
