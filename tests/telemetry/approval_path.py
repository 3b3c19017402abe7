"""What the telemetry tests share: the approval whose path they trace
(start → an external approval dispatched over HTTP to a receiver on
127.0.0.1 → the partner's signed callback → end), the steps that drive it
through an API, and the check of its span tree — the same for the spans of
the in-memory exporter and those an OTLP receiver decoded."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx

from flowledger.outbound.signing import sign_headers
from flowledger.telemetry.ids import dispatch_span_id
from tests.integration.engine_helpers import END, START, definition
from tests.outbound.receivers import Receiver

BASE = "/api/workflows"
SECRET = "telemetry-callback-secret"
# the caller's trace the start request continues (W3C traceparent)
CALLER_TRACE = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
CALLER_TRACEPARENT = f"00-{CALLER_TRACE}-{CALLER_SPAN}-01"


def external_definition(receiver: Receiver) -> dict[str, Any]:
    dispatch = {"kind": "http", "url": f"{receiver.url}/approvals"}
    nodes = [START, {"key": "partner", "type": "external_approval", "dispatch": dispatch}, END]
    return definition("ext", nodes, [("start", "partner"), ("partner", "end")])


@dataclass(frozen=True)
class Walked:
    """What driving the approval left: the instance, its traceId, the
    dispatch job's operationKey and the traceparent the receiver got."""

    instance_id: int
    trace_id: str
    traceparent: str


async def until(check: Callable[[], Awaitable[bool]], what: str, timeout_s: float = 20) -> None:
    deadline = time.monotonic() + timeout_s
    while not await check():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


async def walk_approval(
    client: httpx.AsyncClient, headers: dict[str, str], receiver: Receiver
) -> Walked:
    """Deploy, start with the caller's traceparent, wait for the dispatch to
    reach the receiver, call back with the traceparent it got (what a
    partner propagating the trace does), and wait for the instance's end."""
    response = await client.post(
        f"{BASE}/definitions", json={"definition": external_definition(receiver)}, headers=headers
    )
    assert response.status_code == 201, response.text
    response = await client.post(
        f"{BASE}/instances",
        json={"definitionKey": "ext", "form": {}},
        headers={**headers, "traceparent": CALLER_TRACEPARENT},
    )
    assert response.status_code == 201, response.text
    started = response.json()
    instance_id = int(started["id"])

    async def dispatched() -> bool:
        return bool(receiver.requests)

    await until(dispatched, "the dispatch to reach the receiver")

    async def dispatch_done() -> bool:
        found = await client.get(
            f"{BASE}/engine/jobs", params={"instanceId": instance_id}, headers=headers
        )
        done = [j["status"] for j in found.json()["items"] if j["type"] == "external_dispatch"]
        return done == ["succeeded"]

    # the partner answers once the dispatch finished (an earlier answer races
    # the dispatch's own last step: the instance's end then cancels its job)
    await until(dispatch_done, "the dispatch job to succeed")
    (received,) = receiver.requests
    task_id = json.loads(received.body)["taskId"]
    traceparent = received.headers.get("traceparent", "")  # none while untraced
    raw = json.dumps({"decision": "approve"}).encode()
    url = f"{BASE}/callbacks/external/{task_id}"
    sent = {"Content-Type": "application/json"}
    sent |= sign_headers(SECRET, int(time.time()), raw, context=f"POST {url}")
    if traceparent:
        sent["traceparent"] = traceparent
    response = await client.post(url, content=raw, headers=sent)
    assert response.status_code == 200, response.text

    async def ended() -> bool:
        found = await client.get(f"{BASE}/instances/{instance_id}", headers=headers)
        return bool(found.json()["status"] == "approved")

    await until(ended, "the instance to be approved")
    found = (await client.get(f"{BASE}/instances/{instance_id}", headers=headers)).json()
    return Walked(instance_id, found["traceId"], traceparent)


@dataclass(frozen=True)
class SpanRow:
    """One span as both exporters show it: ids in hex."""

    name: str
    kind: str  # SERVER, CLIENT, INTERNAL, PRODUCER, CONSUMER
    trace_id: str
    span_id: str
    parent_id: str | None
    attributes: dict[str, Any]
    events: list[str]
    status: str  # UNSET, OK, ERROR


def check_tree(spans: list[SpanRow], walked: Walked, operation_key: str) -> None:
    """The approval's path is one trace with the expected parent/child tree:
    caller → start request → step → dispatch → attempt → (its step, the POST)
    → receiver; the POST's context → callback request → step → the end."""
    assert walked.trace_id == CALLER_TRACE  # the instance adopted the caller's trace
    ours = [s for s in spans if s.trace_id == CALLER_TRACE]
    by_id = {s.span_id: s for s in ours}

    def one(name: str, **attributes: Any) -> SpanRow:
        found = [
            s
            for s in ours
            if s.name == name and all(s.attributes.get(k) == v for k, v in attributes.items())
        ]
        assert len(found) == 1, (name, attributes, [(s.name, s.attributes) for s in ours])
        return found[0]

    def children(parent: SpanRow) -> list[SpanRow]:
        return [s for s in ours if s.parent_id == parent.span_id]

    start = one("POST /api/workflows/instances")
    assert (start.kind, start.parent_id) == ("SERVER", CALLER_SPAN)
    (start_step,) = children(start)
    assert start_step.name == "engine.step"
    assert start_step.attributes["workflow.instance_id"] == walked.instance_id
    assert "node_entered" in start_step.events
    dispatch = one("job.dispatch external_dispatch")
    assert (dispatch.kind, dispatch.parent_id) == ("PRODUCER", start_step.span_id)
    assert dispatch.span_id == f"{dispatch_span_id(operation_key):016x}"
    assert dispatch.attributes["workflow.node_id"] == "partner"
    attempt = one("job.attempt external_dispatch")
    assert (attempt.kind, attempt.parent_id) == ("CONSUMER", dispatch.span_id)
    assert attempt.attributes["job.status"] == "success"
    assert attempt.attributes["job.attempt"] == 1
    assert attempt.attributes["job.generation"] == 1
    assert attempt.attributes["workflow.instance_id"] == walked.instance_id
    assert attempt.attributes["workflow.node_id"] == "partner"
    assert attempt.attributes["worker.node"]
    post = one("POST", **{"server.address": "127.0.0.1"})
    assert (post.kind, post.parent_id) == ("CLIENT", attempt.span_id)
    assert post.attributes["http.response.status_code"] == 200
    # the receiver got the POST's context
    assert walked.traceparent == f"00-{CALLER_TRACE}-{post.span_id}-01"
    callback = one("POST /api/workflows/callbacks/external/{taskId}")
    assert (callback.kind, callback.parent_id) == ("SERVER", post.span_id)
    (wake,) = [s for s in children(callback) if s.name == "engine.step"]
    assert "instance_ended" in wake.events
    assert wake.attributes["workflow.status"] == "approved"
    # every span of the trace hangs from the caller's span: one tree
    for span in ours:
        top = span
        while top.parent_id in by_id:
            top = by_id[top.parent_id]
        assert top.parent_id == CALLER_SPAN, (span.name, top.name)
