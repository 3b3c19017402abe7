"""External approval nodes, dispatch side (SPEC X-2, L-17, L-22) on both
backends, against real receivers on 127.0.0.1, with the ``external_dispatch``
jobs run in-process through the real handlers. (The decision callbacks are
tested through the API in tests/api/test_callbacks.py.)

Entering the node gives a pending task assigned to ``external`` and a job
that POSTs the task — taskId, instanceId, nodeKey, callbackPath and the
rendered bodyTemplate — signed with the callback secret. When the dispatch
fails for good, ``dispatchFallback`` decides: auto_approve / auto_reject
(recorded as the task's decision), manual (approval tasks for people), fail
(the default: the node fails along its exception edge). An unknown outcome
(500 to the unsafe POST) applies no fallback; canceling the instance cancels
the dispatch job. A header rendered with CR/LF fails the node before any job."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.callback_schema import workflow_callbacks
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.outbound.signing import verify
from flowledger.settings import Settings, get_settings
from tests.integration.engine_helpers import (
    END,
    START,
    definition,
    instance,
    jobs,
    new_engine,
    run_due_jobs,
    tasks,
    tokens,
    trace_events,
)
from tests.outbound import conftest as outbound_fixtures
from tests.outbound.receivers import Receiver

receiver = outbound_fixtures.receiver
other_receiver = outbound_fixtures.other_receiver
outbound_env = outbound_fixtures.outbound_env

SECRET = "callback-secret-for-tests"
FORM = [{"key": "amount", "type": "number", "required": True}]


@pytest.fixture
async def signed_env(
    monkeypatch: pytest.MonkeyPatch,
    outbound_env: Settings,
) -> AsyncIterator[Settings]:
    monkeypatch.setenv("FLOWLEDGER_CALLBACK_SECRET", SECRET)
    yield get_settings()


async def deploy_external(engine: Engine, url: str, *, repair: bool = False, **node: Any) -> None:
    dispatch = {
        "kind": "http",
        "url": f"{url}/approvals",
        "bodyTemplate": '{"amount": {{form.amount}}, "taskId": "not ours"}',
    }
    nodes = [START, {"key": "partner", "type": "external_approval", "dispatch": dispatch, **node}]
    nodes.append(END)
    edges: list[Any] = [("start", "partner"), ("partner", "end")]
    if repair:
        nodes.append({"key": "repair", "type": "catch", "assignees": {"users": ["root"]}})
        edges += [{"from": "partner", "to": "repair", "on": "error"}, ("repair", "end")]
    await engine.deploy(definition("ext", nodes, edges, FORM), actor="admin")


async def recorded(db: Database) -> list[dict[str, Any]]:
    async with db.read() as conn:
        rows = await conn.execute(select(workflow_callbacks).order_by(workflow_callbacks.c.id))
        return [dict(r) for r in rows.mappings().all()]


async def test_entering_dispatches_the_task_signed_X2(
    db: Database, clock: ManualClock, receiver: Receiver, signed_env: Settings
) -> None:
    engine = new_engine(db, clock)
    await deploy_external(engine, receiver.url)
    iid = await engine.start("ext", form={"amount": 1200}, initiator="u")
    (task,) = await tasks(db, iid)
    assert (task["kind"], task["status"], task["assignee"]) == (
        "external_approval",
        "pending",
        "external",
    )
    (job,) = await jobs(db, iid, type="external_dispatch")
    assert job["idempotency_key"] == f"external:{task['id']}"

    assert await run_due_jobs(db, clock) == 1
    (received,) = receiver.requests
    assert (received.method, received.path) == ("POST", "/approvals")
    assert json.loads(received.body) == {
        "amount": 1200,
        "taskId": task["id"],  # ours win over the template's
        "instanceId": iid,
        "nodeKey": "partner",
        "definitionKey": "ext",
        "callbackPath": f"/api/workflows/callbacks/external/{task['id']}",
        "decisions": ["approve", "reject"],
    }
    headers = httpx.Headers(received.headers)
    verify(SECRET, headers, received.body, now=clock.now().timestamp(), tolerance_s=300)
    (job,) = await jobs(db, iid, type="external_dispatch")
    assert (job["status"], job["result"]) == ("succeeded", {"status": 200, "dispatched": True})
    assert headers["x-idempotency-key"] == job["operation_key"]
    assert "external_dispatched" in [e["event"] for e in await trace_events(db, iid)]
    (task,) = await tasks(db, iid)
    assert task["status"] == "pending"  # waits for the external decision


@pytest.mark.parametrize(
    ("fallback", "status", "decision"),
    [("auto_approve", "approved", "approve"), ("auto_reject", "rejected", "reject")],
)
async def test_dispatch_fallback_decides_when_dispatch_fails_X2(
    fallback: str,
    status: str,
    decision: str,
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.reply = 404
    engine = new_engine(db, clock)
    await deploy_external(engine, receiver.url, dispatchFallback=fallback, maxRetries=1)
    iid = await engine.start("ext", form={"amount": 5}, initiator="u")
    await run_due_jobs(db, clock)
    assert (await instance(db, iid))["status"] == "running"  # one retry left
    clock.advance(seconds=30)
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 2
    assert (await instance(db, iid))["status"] == status
    (task,) = await tasks(db, iid)
    assert (task["status"], task["action"], task["finished_by"]) == (
        "completed",
        decision,
        "system",
    )
    assert task["comment"].startswith(f"[dispatch failed] auto-{decision}d")
    # the decision ended the instance; the L-22 cleanup spares the dispatch
    # job running that step, so it settles with its real outcome
    (job,) = await jobs(db, iid, type="external_dispatch")
    assert (job["status"], job["cancel_reason"]) == ("dead", None)
    assert job["last_error_code"] == "attempts_exhausted"
    assert "answered 404" in job["last_error"]
    failed = [e for e in await trace_events(db, iid) if e["event"] == "external_dispatch_failed"]
    assert [(e["detail"]["code"], e["detail"]["fallback"]) for e in failed] == [
        ("http_client_error", fallback)
    ]
    (record,) = await recorded(db)
    assert (record["task_id"], record["outcome"], record["source"]) == (
        task["id"],
        decision,
        "dispatch_fallback",
    )


async def test_manual_fallback_hands_the_decision_to_people_X2(
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.reply = 400
    engine = new_engine(db, clock)
    await deploy_external(
        engine,
        receiver.url,
        dispatchFallback="manual",
        maxRetries=0,
        assignees={"users": ["alice", "bob"]},
    )
    iid = await engine.start("ext", form={"amount": 5}, initiator="u")
    await run_due_jobs(db, clock)
    ext, *people = await tasks(db, iid)
    assert (ext["kind"], ext["status"]) == ("external_approval", "skipped")
    assert [(t["kind"], t["status"], t["assignee"]) for t in people] == [
        ("approval", "pending", "alice"),
        ("approval", "pending", "bob"),
    ]
    await engine.approve(people[1]["id"], actor="bob", comment="checked by phone")
    assert (await instance(db, iid))["status"] == "approved"


async def test_fail_fallback_follows_the_exception_edge_X2(
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.reply = 403
    engine = new_engine(db, clock)
    await deploy_external(engine, receiver.url, maxRetries=0, repair=True)
    iid = await engine.start("ext", form={"amount": 5}, initiator="u")
    await run_due_jobs(db, clock)
    ext, repair = await tasks(db, iid)
    assert (ext["status"], repair["node_key"], repair["status"]) == (
        "canceled",
        "repair",
        "pending",
    )
    row = await instance(db, iid)
    assert row["status"] == "running" and row["error"].startswith("partner: ")
    assert await recorded(db) == []


async def test_an_unconfirmed_dispatch_applies_no_fallback_L17_X2(
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.reply = 500
    engine = new_engine(db, clock)
    await deploy_external(engine, receiver.url, dispatchFallback="auto_approve")
    iid = await engine.start("ext", form={"amount": 5}, initiator="u")
    await run_due_jobs(db, clock)
    clock.advance(seconds=3600)
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 1
    (job,) = await jobs(db, iid, type="external_dispatch")
    assert (job["status"], job["last_error_code"]) == ("dead", "external_outcome_unconfirmed")
    (task,) = await tasks(db, iid)
    assert task["status"] == "pending"
    assert (await instance(db, iid))["status"] == "running"
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["partner"]
    assert await recorded(db) == []


async def test_canceling_the_instance_cancels_the_dispatch_L22(
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    engine = new_engine(db, clock)
    await deploy_external(engine, receiver.url)
    iid = await engine.start("ext", form={"amount": 5}, initiator="u")
    await engine.cancel(iid, actor="admin")
    assert await run_due_jobs(db, clock) == 0
    assert receiver.requests == []
    (job,) = await jobs(db, iid, type="external_dispatch")
    assert job["status"] == "canceled"


async def test_a_header_rendered_with_crlf_fails_the_node_before_any_job_X2_X4(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    engine = new_engine(db, clock)
    dispatch = {
        "kind": "http",
        "url": f"{receiver.url}/approvals",
        "headers": {"X-Amount": "{{form.note}}"},
    }
    form = [{"key": "note", "type": "string"}]
    nodes = [START, {"key": "partner", "type": "external_approval", "dispatch": dispatch}, END]
    edges: list[Any] = [("start", "partner"), ("partner", "end")]
    await engine.deploy(definition("ext", nodes, edges, form), actor="admin")
    iid = await engine.start("ext", form={"note": "5\nX-Admin: yes"}, initiator="u")
    assert await jobs(db, iid) == []
    assert await run_due_jobs(db, clock) == 0
    assert receiver.requests == []
    (task,) = await tasks(db, iid)
    assert task["status"] == "canceled" and "'X-Amount'" in task["comment"]
    failed = [e for e in await trace_events(db, iid) if e["event"] == "node_failed"]
    assert [e["detail"]["code"] for e in failed] == ["external_dispatch_invalid"]
