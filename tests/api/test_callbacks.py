"""Signed callbacks (SPEC X-1, X-2, A-4) through the REST API on both
backends: ``POST /api/workflows/callbacks/external/{taskId}`` and
``/callbacks/trigger/{jobId}``, HMAC-signed over the raw body with the
callback secret, against instances whose dispatch / trigger jobs really ran
against a receiver on 127.0.0.1.

External approval: approve moves on, reject rejects; a duplicate or late
callback answers 200 with the recorded decision and decides nothing again; a
bad, missing or stale signature is 401 and changes nothing; a callback after
the instance was canceled is 409 ``task_not_pending``; no secret configured
is 503. Async trigger: the callback's result is mapped into the form and the
flow moves on (a duplicate changes nothing); a failure callback fails the
node; a sync trigger's job takes no callback."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import pytest
from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.callback_schema import workflow_callbacks
from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit, workflow_event_outbox
from flowledger.engine import Engine
from flowledger.outbound.signing import sign_headers
from flowledger.settings import Settings, get_settings
from tests.api.conftest import BASE, Api
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    jobs,
    run_due_jobs,
    tasks,
    trace_events,
)
from tests.outbound import conftest as outbound_fixtures
from tests.outbound.receivers import Receiver

receiver = outbound_fixtures.receiver
other_receiver = outbound_fixtures.other_receiver
outbound_env = outbound_fixtures.outbound_env

SECRET = "s3cret-shared-with-the-partner"


@pytest.fixture
async def secret(
    monkeypatch: pytest.MonkeyPatch,
    outbound_env: Settings,
) -> AsyncIterator[Settings]:
    monkeypatch.setenv("FLOWLEDGER_CALLBACK_SECRET", SECRET)
    yield get_settings()


async def call_back(
    api: Api,
    path: str,
    body: Any,
    *,
    key: str = SECRET,
    age_s: int = 0,
    signed: bool = True,
) -> Any:
    raw = body if isinstance(body, bytes) else json.dumps(body).encode()
    headers = {"Content-Type": "application/json"}
    url = f"{BASE}/callbacks{path}"
    if signed:
        stamp = int(api.clock.now().timestamp()) - age_s
        headers |= sign_headers(key, stamp, raw, context=f"POST {url}")
    return await api.client.post(url, content=raw, headers=headers)


async def rows(db: Database, table: Any) -> list[dict[str, Any]]:
    async with db.read() as conn:
        result = await conn.execute(select(table).order_by(table.c.id))
        return [dict(r) for r in result.mappings().all()]


async def external_instance(engine: Engine, db: Database, clock: ManualClock, url: str) -> Any:
    nodes: list[dict[str, Any]] = [
        START,
        {"key": "partner", "type": "external_approval", "dispatch": {"kind": "http", "url": url}},
        approval("after", "alice"),
        END,
    ]
    edges: list[Any] = [("start", "partner"), ("partner", "after"), ("after", "end")]
    await engine.deploy(definition("ext", nodes, edges), actor="admin")
    iid = await engine.start("ext", form={}, initiator="u")
    assert await run_due_jobs(db, clock) == 1  # the dispatch
    (task,) = await tasks(db, iid, node_key="partner")
    return iid, task["id"]


# ------------------------------------------------------- external approval


async def test_external_approve_moves_on_X2(
    api: Api, engine: Engine, db: Database, clock: ManualClock, receiver: Receiver, secret: Settings
) -> None:
    iid, task_id = await external_instance(engine, db, clock, receiver.url)
    assert len(receiver.requests) == 1
    body = {"decision": "approve", "comment": "fine", "decidedBy": "p.jones"}
    response = await call_back(api, f"/external/{task_id}", body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert answer["taskId"] == task_id and answer["instanceId"] == iid
    assert (answer["decision"], answer["duplicate"], answer["source"]) == (
        "approve",
        False,
        "callback",
    )
    assert (answer["comment"], answer["decidedBy"]) == ("fine", "p.jones")
    (task,) = await tasks(db, iid, node_key="partner")
    assert (task["status"], task["action"], task["finished_by"], task["comment"]) == (
        "completed",
        "approve",
        "external:p.jones",
        "fine",
    )
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["after"]
    outbox = [r["event_type"] for r in await rows(db, workflow_event_outbox)]
    assert "external.decided" in outbox
    (audit,) = [r for r in await rows(db, operation_audit) if r["action"] == "callback.external"]
    assert (audit["actor"], audit["target_id"], audit["result"]) == (
        "external:p.jones",
        str(task_id),
        "ok",
    )


async def test_external_reject_rejects_the_instance_X2(
    api: Api, engine: Engine, db: Database, clock: ManualClock, receiver: Receiver, secret: Settings
) -> None:
    iid, task_id = await external_instance(engine, db, clock, receiver.url)
    response = await call_back(api, f"/external/{task_id}", {"decision": "reject"})
    assert response.status_code == 200, response.text
    assert response.json()["decision"] == "reject"
    assert (await instance(db, iid))["status"] == "rejected"


async def test_a_duplicate_callback_answers_with_the_recorded_decision_X2(
    api: Api, engine: Engine, db: Database, clock: ManualClock, receiver: Receiver, secret: Settings
) -> None:
    iid, task_id = await external_instance(engine, db, clock, receiver.url)
    first = await call_back(api, f"/external/{task_id}", {"decision": "approve"})
    clock.advance(seconds=60)
    again = await call_back(api, f"/external/{task_id}", {"decision": "approve"})
    late = await call_back(api, f"/external/{task_id}", {"decision": "reject"})
    assert (first.status_code, again.status_code, late.status_code) == (200, 200, 200)
    for answer in (again.json(), late.json()):
        assert answer == {**first.json(), "duplicate": True}
    assert (await instance(db, iid))["status"] == "running"  # at "after", not rejected
    completions = [
        e
        for e in await trace_events(db, iid)
        if e["event"] == "task_completed" and e["task_id"] == task_id
    ]
    assert len(completions) == 1
    assert len(await rows(db, workflow_callbacks)) == 1
    assert len(await tasks(db, iid, node_key="after")) == 1


@pytest.mark.parametrize(
    ("how", "code"),
    [
        ("wrong_key", "signature_mismatch"),
        ("unsigned", "signature_missing"),
        ("stale", "timestamp_out_of_tolerance"),
        ("tampered", "signature_mismatch"),
        ("other_task", "signature_mismatch"),
        ("webhook_style", "signature_mismatch"),
        ("unicode_digits", "timestamp_invalid"),
    ],
)
async def test_a_bad_signature_is_refused_and_changes_nothing_X2(
    how: str,
    code: str,
    api: Api,
    engine: Engine,
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    secret: Settings,
) -> None:
    iid, task_id = await external_instance(engine, db, clock, receiver.url)
    path = f"/external/{task_id}"
    body = {"decision": "approve"}
    if how == "wrong_key":
        response = await call_back(api, path, body, key="guessed")
    elif how == "unsigned":
        response = await call_back(api, path, body, signed=False)
    elif how == "stale":
        response = await call_back(api, path, body, age_s=301)
    else:
        url = f"{BASE}/callbacks{path}"
        raw = json.dumps(body).encode()
        stamp = int(clock.now().timestamp())
        if how == "tampered":  # signed for one body, sent with another
            signed_raw = json.dumps({"decision": "reject"}).encode()
            headers = sign_headers(SECRET, stamp, signed_raw, context=f"POST {url}")
        elif how == "other_task":  # a captured decision replayed to another task
            other = f"{BASE}/callbacks/external/{task_id + 1000}"
            headers = sign_headers(SECRET, stamp, raw, context=f"POST {other}")
        elif how == "webhook_style":  # timestamp + body only, as flowledger signs
            headers = sign_headers(SECRET, stamp, raw)  # what it sends: not a callback
        else:  # "²".isdigit() is True in Python; it must be a 401, not a 500
            headers = sign_headers(SECRET, stamp, raw, context=f"POST {url}")
            headers["X-Flowledger-Timestamp"] = "\u00b2"
            response = await api.client.post(
                url, content=raw, headers={k: v.encode("latin-1") for k, v in headers.items()}
            )
        if how != "unicode_digits":
            response = await api.client.post(url, content=raw, headers=headers)
    assert response.status_code == 401, response.text
    assert response.json()["code"] == code
    (task,) = await tasks(db, iid, node_key="partner")
    assert task["status"] == "pending"
    assert (await instance(db, iid))["status"] == "running"
    assert await rows(db, workflow_callbacks) == []


async def test_a_callback_after_cancel_is_refused_cleanly_X2(
    api: Api, engine: Engine, db: Database, clock: ManualClock, receiver: Receiver, secret: Settings
) -> None:
    iid, task_id = await external_instance(engine, db, clock, receiver.url)
    await engine.cancel(iid, actor="admin", reason="order withdrawn")
    response = await call_back(api, f"/external/{task_id}", {"decision": "approve"})
    assert response.status_code == 409, response.text
    assert (response.json()["code"], response.json()["field"]) == ("task_not_pending", "taskId")
    assert (await instance(db, iid))["status"] == "canceled"
    (task,) = await tasks(db, iid, node_key="partner")
    assert task["status"] == "canceled"
    assert await rows(db, workflow_callbacks) == []
    (audit,) = [r for r in await rows(db, operation_audit) if r["action"] == "callback.external"]
    assert (audit["result"], audit["detail"]["code"]) == ("failed", "task_not_pending")


async def test_unknown_subjects_and_bad_bodies_X2_A4(
    api: Api, engine: Engine, db: Database, clock: ManualClock, receiver: Receiver, secret: Settings
) -> None:
    iid, task_id = await external_instance(engine, db, clock, receiver.url)
    missing = await call_back(api, "/external/999999", {"decision": "approve"})
    assert (missing.status_code, missing.json()["code"]) == (404, "callback_subject_not_found")
    await call_back(api, f"/external/{task_id}", {"decision": "approve"})
    (human,) = await tasks(db, iid, node_key="after")
    not_external = await call_back(api, f"/external/{human['id']}", {"decision": "approve"})
    assert not_external.status_code == 404
    bad = await call_back(api, f"/external/{task_id}", {"decision": "maybe"})
    assert (bad.status_code, bad.json()["code"]) == (422, "validation_error")
    assert bad.json()["field"] == "body.decision"
    garbage = await call_back(api, f"/external/{task_id}", b"{not json")
    assert garbage.status_code == 422


async def test_callbacks_are_refused_while_no_secret_is_set_X2(
    api: Api, engine: Engine, db: Database, clock: ManualClock
) -> None:
    response = await call_back(api, "/external/1", {"decision": "approve"})
    assert (response.status_code, response.json()["code"]) == (503, "callback_secret_unset")


# ------------------------------------------------------------ async trigger


async def async_trigger(
    engine: Engine, db: Database, clock: ManualClock, url: str, **node: Any
) -> tuple[int, int]:
    form = [{"key": "orderId", "type": "string"}, {"key": "erpId", "type": "string"}]
    call = {
        "kind": "http",
        "url": f"{url}/orders",
        "httpMethod": "POST",
        "mode": "async",
        "resultMapping": {"erpId": "response.body.id"},
    }
    nodes = [START, {"key": "erp", "type": "trigger", "call": call, **node}]
    nodes += [approval("after", "alice"), {"key": "repair", "type": "catch"}, END]
    edges: list[Any] = [("start", "erp"), ("erp", "after"), ("after", "end"), ("repair", "end")]
    edges.append({"from": "erp", "to": "repair", "on": "error"})
    await engine.deploy(definition("erp", nodes, edges, form), actor="admin")
    iid = await engine.start("erp", form={"orderId": "A1"}, initiator="u")
    assert await run_due_jobs(db, clock) == 1
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    return iid, int(job["id"])


async def test_async_trigger_callback_maps_the_result_and_moves_on_X1(
    api: Api, engine: Engine, db: Database, clock: ManualClock, receiver: Receiver, secret: Settings
) -> None:
    receiver.reply = 202
    iid, job_id = await async_trigger(engine, db, clock, receiver.url)
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    assert (job["status"], job["result"]) == (
        "succeeded",
        {"status": 202, "awaitingCallback": True},
    )
    (task,) = await tasks(db, iid, node_key="erp")
    assert task["status"] == "waiting"

    body = {"status": "succeeded", "result": {"id": "ERP-9"}}
    response = await call_back(api, f"/trigger/{job_id}", body)
    assert response.status_code == 200, response.text
    answer = response.json()
    assert (answer["jobId"], answer["taskId"], answer["status"], answer["duplicate"]) == (
        job_id,
        task["id"],
        "succeeded",
        False,
    )
    assert (await instance(db, iid))["form_data"] == {"orderId": "A1", "erpId": "ERP-9"}
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["after"]

    again = await call_back(api, f"/trigger/{job_id}", {"status": "failed", "error": "late"})
    assert again.status_code == 200
    assert (again.json()["status"], again.json()["duplicate"]) == ("succeeded", True)
    assert len(await tasks(db, iid, node_key="after")) == 1
    outbox = [r["event_type"] for r in await rows(db, workflow_event_outbox)]
    assert outbox.count("trigger.succeeded") == 1


async def test_async_trigger_failure_callback_fails_the_node_X1(
    api: Api, engine: Engine, db: Database, clock: ManualClock, receiver: Receiver, secret: Settings
) -> None:
    iid, job_id = await async_trigger(engine, db, clock, receiver.url)
    response = await call_back(api, f"/trigger/{job_id}", {"status": "failed", "error": "no stock"})
    assert response.status_code == 200, response.text
    assert response.json()["outcome"] == {"failed": "trigger_callback_failed", "error": "no stock"}
    (repair,) = await tasks(db, iid, status="pending")
    assert repair["node_key"] == "repair"
    assert (await instance(db, iid))["error"] == "erp: no stock"


async def test_a_sync_trigger_or_unknown_job_takes_no_callback_X1(
    api: Api, engine: Engine, db: Database, clock: ManualClock, receiver: Receiver, secret: Settings
) -> None:
    nodes: list[dict[str, Any]] = [
        START,
        {"key": "erp", "type": "trigger", "call": {"kind": "http", "url": receiver.url}},
        END,
    ]
    edges: list[Any] = [("start", "erp"), ("erp", "end")]
    await engine.deploy(definition("sync", nodes, edges), actor="a")
    iid = await engine.start("sync", form={}, initiator="u")
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    response = await call_back(api, f"/trigger/{job['id']}", {"status": "succeeded"})
    assert (response.status_code, response.json()["code"]) == (409, "trigger_not_async")
    missing = await call_back(api, "/trigger/424242", {"status": "succeeded"})
    assert (missing.status_code, missing.json()["code"]) == (404, "callback_subject_not_found")
