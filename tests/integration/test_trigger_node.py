"""Trigger nodes (SPEC X-1, C-1, L-16, L-17, L-22) on both backends, against
real receivers on 127.0.0.1 (allow-listed for their ports only), with the
``trigger_dispatch`` jobs run in-process through the real handlers.

A sync 2xx writes the resultMapping into the form and moves on; a clear 4xx
under ``onFailure: continue`` passes the node after one attempt; under
``onFailure: retry`` it uses its budget (``maxRetries + 1``) with backoff,
then fails the node along its exception edge; a 500 to an unsafe POST is the
L-17 dead letter with the token still at the node and exactly one request
(an operator's retry then resends it); a call whose URL cannot be rendered
fails the node at once, and so does a header whose rendered value holds CR/LF
(header injection); a trigger job of a canceled instance sends nothing.
A connector call goes through the tenant's connector."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox
from flowledger.engine import Engine
from flowledger.outbound.connector_config import ConnectorDraft, RateLimit
from flowledger.outbound.connector_store import create_connector
from flowledger.settings import Settings
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    jobs,
    new_engine,
    run_due_jobs,
    tasks,
    tokens,
    trace_events,
)
from tests.integration.ledger_helpers import attempt_rows
from tests.ledger_access import ledger_of
from tests.outbound import conftest as outbound_fixtures
from tests.outbound.receivers import Receiver
from tests.runtime_support import process_secrets

receiver = outbound_fixtures.receiver
other_receiver = outbound_fixtures.other_receiver
outbound_env = outbound_fixtures.outbound_env

FORM: list[dict[str, Any]] = [
    {"key": "orderId", "type": "string", "required": True},
    {"key": "erpId", "type": "string"},
    {"key": "erpStatus", "type": "integer"},
]


def call(url: str, **extra: Any) -> dict[str, Any]:
    return {
        "kind": "http",
        "url": f"{url}/orders/{{{{form.orderId}}}}",
        "httpMethod": "POST",
        "headers": {"X-Order": "{{form.orderId}}"},
        "bodyTemplate": '{"order": "{{form.orderId}}", "instance": {{instanceId}}}',
        **extra,
    }


async def deploy_trigger(
    engine: Engine, call_: dict[str, Any], *, repair: bool = False, **node: Any
) -> None:
    nodes: list[dict[str, Any]] = [START, {"key": "erp", "type": "trigger", "call": call_, **node}]
    nodes += [approval("after", "alice"), END]
    edges: list[Any] = [("start", "erp"), ("erp", "after"), ("after", "end")]
    if repair:
        nodes.append({"key": "repair", "type": "catch", "assignees": {"users": ["root"]}})
        edges += [{"from": "erp", "to": "repair", "on": "error"}, ("repair", "end")]
    await engine.deploy(definition("erp", nodes, edges, FORM), actor="admin")


async def events(db: Database, instance_id: int) -> list[dict[str, Any]]:
    async with db.read() as conn:
        rows = await conn.execute(
            workflow_event_outbox.select()
            .where(workflow_event_outbox.c.instance_id == instance_id)
            .order_by(workflow_event_outbox.c.id)
        )
        return [dict(r) for r in rows.mappings().all()]


async def test_sync_success_maps_the_result_into_the_form_X1_L16(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.body = b'{"id": "ERP-7", "lines": [1, 2]}'
    engine = new_engine(db, clock)
    mapping = {"erpId": "response.body.id", "erpStatus": "response.status"}
    await deploy_trigger(engine, call(receiver.url, resultMapping=mapping))
    order = 'A/1 "x"'  # a quote stays inside its JSON string in the body
    iid = await engine.start("erp", form={"orderId": order}, initiator="u")
    (task,) = await tasks(db, iid, node_key="erp")
    assert (task["kind"], task["status"], task["assignee"]) == ("trigger", "waiting", "system")
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    assert job["max_attempts"] == 4  # maxRetries unset, no continue: 3 retries
    assert job["idempotency_key"] == f"trigger:{task['id']}"

    assert await run_due_jobs(db, clock) == 1
    (received,) = receiver.requests
    assert (received.method, received.path) == ("POST", "/orders/A%2F1%20%22x%22")
    assert json.loads(received.body) == {"order": order, "instance": iid}
    assert received.headers["content-type"] == "application/json"
    assert received.headers["x-order"] == order
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    assert received.headers["x-idempotency-key"] == job["operation_key"]
    assert job["status"] == "succeeded"
    assert job["result"] == {"status": 200, "done": True}

    row = await instance(db, iid)
    assert row["form_data"] == {"orderId": order, "erpId": "ERP-7", "erpStatus": 200}
    assert row["error"] is None
    (task,) = await tasks(db, iid, node_key="erp")
    assert (task["status"], task["action"]) == ("completed", "handle")
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["after"]
    assert "trigger.succeeded" in [e["event_type"] for e in await events(db, iid)]


async def test_a_4xx_under_onfailure_continue_passes_the_node_X1_C1(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.reply = 400
    engine = new_engine(db, clock)
    await deploy_trigger(engine, call(receiver.url), onFailure="continue")
    iid = await engine.start("erp", form={"orderId": "A1"}, initiator="u")
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 1
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    assert (job["status"], job["max_attempts"]) == ("dead", 1)
    assert job["last_error_code"] == "attempts_exhausted"
    (attempt,) = await attempt_rows(db, job["id"])
    assert (attempt.error_code, attempt.response["status"]) == ("http_client_error", 400)
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["after"]
    (task,) = await tasks(db, iid, node_key="erp")
    assert (task["status"], task["action"]) == ("completed", "reject")
    row = await instance(db, iid)
    assert (row["status"], row["error"]) == ("running", None)
    failed = [e for e in await trace_events(db, iid) if e["event"] == "node_failed"]
    assert [(e["node_key"], e["detail"]["policy"]) for e in failed] == [("erp", "continue")]
    assert "trigger.failed" in [e["event_type"] for e in await events(db, iid)]


async def test_a_4xx_under_onfailure_retry_uses_the_budget_then_fails_X1_C1(
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLOWLEDGER_ADMIN_USERS", "*:ops")
    receiver.reply = 422
    engine = new_engine(db, clock)
    await deploy_trigger(engine, call(receiver.url), onFailure="retry", maxRetries=1, repair=True)
    iid = await engine.start("erp", form={"orderId": "A1"}, initiator="u")
    await run_due_jobs(db, clock)
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    assert (job["status"], job["attempts"], job["max_attempts"]) == ("pending", 1, 2)
    assert (await tasks(db, iid, node_key="erp"))[0]["status"] == "waiting"  # not failed yet

    clock.advance(seconds=30)  # the backoff
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 2
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    assert (job["status"], job["last_error_code"]) == ("dead", "attempts_exhausted")
    attempts = await attempt_rows(db, job["id"])
    assert [(a.error_code, a.response["status"]) for a in attempts] == [
        ("http_client_error", 422),
        ("http_client_error", 422),
    ]
    # C-1: onFailure retry decides before the exception edge — once the
    # budget is spent, manual repair at the failed node (C-3), not the edge
    (repair,) = await tasks(db, iid, status="pending")
    assert (repair["node_key"], repair["assignee"], repair["kind"]) == ("erp", "ops", "catch")
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["erp"]
    assert (await instance(db, iid))["status"] == "running"
    failed = [e for e in await trace_events(db, iid) if e["event"] == "node_failed"]
    assert [e["detail"]["code"] for e in failed] == ["http_client_error"]


async def test_a_500_to_an_unsafe_post_is_the_l17_dead_letter_X1_L17(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.reply = 500
    engine = new_engine(db, clock)
    await deploy_trigger(engine, call(receiver.url), onFailure="continue", repair=True)
    iid = await engine.start("erp", form={"orderId": "A1"}, initiator="u")
    await run_due_jobs(db, clock)
    clock.advance(seconds=3600)
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 1  # never resent on its own
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    assert (job["status"], job["last_error_code"]) == ("dead", "external_outcome_unconfirmed")
    # no automatic fallback: not continued, no catch node, the token waits at the node
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["erp"]
    (task,) = await tasks(db, iid, node_key="erp")
    assert task["status"] == "waiting"
    assert not [e for e in await trace_events(db, iid) if e["event"] == "node_failed"]
    assert (await instance(db, iid))["error"] is None

    # the operator checked the receiver and retries: the same request again
    receiver.reply = 200
    async with db.begin() as conn:
        await ledger_of(conn).job_retry(conn, job["id"], now=clock.now())
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 2
    assert receiver.requests[1].headers["x-idempotency-key"] == job["operation_key"]
    assert receiver.requests[1].body == receiver.requests[0].body
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["after"]


async def test_a_call_that_cannot_be_rendered_fails_the_node_X1_X4(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    # deploys (the placeholder is in a header value), but renders a CR/LF header
    bad = {
        "kind": "http",
        "url": "http://127.0.0.1:9/x",
        "httpMethod": "GET",
        "headers": {"X-Order": "{{form.orderId}}"},
    }
    await deploy_trigger(engine, bad)
    iid = await engine.start("erp", form={"orderId": "A1\r\nX-Evil: 1"}, initiator="u")
    assert await jobs(db, iid) == []
    failed = [e for e in await trace_events(db, iid) if e["event"] == "node_failed"]
    assert [e["detail"]["code"] for e in failed] == ["trigger_call_invalid"]
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["erp"]


async def test_a_trigger_of_a_canceled_instance_sends_nothing_L22(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    engine = new_engine(db, clock)
    await deploy_trigger(engine, call(receiver.url))
    iid = await engine.start("erp", form={"orderId": "A1"}, initiator="u")
    await engine.cancel(iid, actor="admin")
    await run_due_jobs(db, clock)
    assert receiver.requests == []
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    assert job["status"] == "succeeded"  # skipped by its handler
    (attempt,) = await attempt_rows(db, job["id"])
    assert attempt.status == "skipped"


async def test_a_connector_trigger_calls_through_the_tenants_connector_X1_X3(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.body = b'{"id": "C-1"}'
    async with db.begin() as conn:
        draft = ConnectorDraft(key="erp", name="ERP", base_url=f"{receiver.url}/api")
        await create_connector(
            conn, draft, tenant="default", actor="admin", now=clock.now(), box=process_secrets()
        )
    engine = new_engine(db, clock)
    connector_call = {
        "kind": "connector",
        "connectorId": "erp",
        "url": "/orders/{{form.orderId}}",
        "httpMethod": "PUT",
        "idempotent": True,
        "resultMapping": {"erpId": "response.body.id"},
    }
    await deploy_trigger(engine, connector_call)
    iid = await engine.start("erp", form={"orderId": "A1"}, initiator="u")
    await run_due_jobs(db, clock)
    (received,) = receiver.requests
    assert (received.method, received.path) == ("PUT", "/api/orders/A1")
    assert (await instance(db, iid))["form_data"]["erpId"] == "C-1"


async def test_a_rate_limited_trigger_is_deferred_not_failed_X1_X3_C1(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    # one call per 10 s: the second instance's call is refused unsent; under
    # onFailure continue (one attempt) that must not pass the node — nothing
    # was attempted — it runs again when the limiter allows
    async with db.begin() as conn:
        draft = ConnectorDraft(
            key="erp",
            name="ERP",
            base_url=f"{receiver.url}/api",
            rate_limit=RateLimit(requests_per_second=0.1, burst=1),
        )
        await create_connector(
            conn, draft, tenant="default", actor="admin", now=clock.now(), box=process_secrets()
        )
    engine = new_engine(db, clock)
    connector_call = {"kind": "connector", "connectorId": "erp", "url": "/orders/{{form.orderId}}"}
    await deploy_trigger(engine, connector_call, onFailure="continue")
    first = await engine.start("erp", form={"orderId": "A1"}, initiator="u")
    second = await engine.start("erp", form={"orderId": "A2"}, initiator="u")
    await run_due_jobs(db, clock)
    assert [r.path for r in receiver.requests] == ["/api/orders/A1"]
    assert [t["node_key"] for t in await tasks(db, first, status="pending")] == ["after"]
    (job,) = await jobs(db, second, type="trigger_dispatch")
    assert (job["status"], job["attempts"], job["max_attempts"]) == ("pending", 0, 1)
    assert job["last_error_code"] == "connector_rate_limited"
    assert [t["node_key"] for t in await tokens(db, second, "active")] == ["erp"]
    assert await tasks(db, second, status="pending") == []  # the node was not passed


async def test_a_result_that_does_not_fit_the_form_fails_the_node_X1_E7(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.body = b'{"id": "not a number"}'
    engine = new_engine(db, clock)
    mapping = {"erpStatus": "response.body.id"}  # erpStatus is an integer field
    await deploy_trigger(engine, call(receiver.url, resultMapping=mapping), repair=True)
    iid = await engine.start("erp", form={"orderId": "A1"}, initiator="u")
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 1  # the call is not resent for a mapping problem
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    assert (job["status"], job["last_error_code"]) == ("dead", "trigger_result_mapping_failed")
    assert "form.erpStatus" in job["last_error"]
    assert "erpStatus" not in (await instance(db, iid))["form_data"]
    (repair,) = await tasks(db, iid, status="pending")
    assert repair["node_key"] == "repair"


async def test_a_header_rendered_with_crlf_fails_the_node_before_any_job_X1_X4(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    """``X-Order: {{form.orderId}}`` with CR/LF in the form value would inject
    headers: the node fails at once, nothing is enqueued, nothing is sent."""
    engine = new_engine(db, clock)
    await deploy_trigger(engine, call(receiver.url), repair=True)
    iid = await engine.start("erp", form={"orderId": "A1\r\nX-Admin: yes"}, initiator="u")
    assert await jobs(db, iid) == []
    assert await run_due_jobs(db, clock) == 0
    assert receiver.requests == []
    failed = [e for e in await trace_events(db, iid) if e["event"] == "node_failed"]
    assert [e["detail"]["code"] for e in failed] == ["trigger_call_invalid"]
    (task,) = await tasks(db, iid, node_key="erp")
    assert (task["status"], task["action"]) == ("completed", "reject")
    assert "'X-Order'" in task["comment"] and "control character" in task["comment"]
    (repair,) = await tasks(db, iid, status="pending")
    assert repair["node_key"] == "repair"


async def test_rendered_header_values_lose_surrounding_blanks_X1_X4(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    engine = new_engine(db, clock)
    await deploy_trigger(engine, call(receiver.url))
    iid = await engine.start("erp", form={"orderId": " A1\t"}, initiator="u")
    await run_due_jobs(db, clock)
    (received,) = receiver.requests
    assert received.headers["x-order"] == "A1"
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["after"]
