"""The failure policies end to end (SPEC C-1, C-2, C-3, C-5), one test per
action, on both backends: a trigger node ``erp`` calls a real receiver on
127.0.0.1 that refuses it (a clear 422) and the policy decides what happens
next. Each test checks the instance, its tasks and tokens, the ticket and
its history, and the jobs left behind; the admins of tenant ``default``
are alice and bob (tests/compensation/conftest.py)."""

from __future__ import annotations

from typing import Any

from flowledger.api.permissions import TASK_ACT
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.settings import Settings
from tests.api.conftest import Api, People
from tests.compensation.policy_flows import (
    ORDER,
    action_jobs,
    failure_policies,  # noqa: F401  (autouse: the policies are the engine's hooks)
    history_kinds,
    linear,
    messages_to,
    outbox,
    path,
    requests_to,
    tickets_of,
    undo,
    undo_body,
)
from tests.integration.engine_helpers import (
    instance,
    jobs,
    pending_task,
    run_due_jobs,
    tasks,
    tokens,
    trace_events,
)
from tests.outbound.receivers import Receiver


async def _failed(
    engine: Engine, db: Database, clock: ManualClock, receiver: Receiver, **erp: Any
) -> int:
    """Deploy start -> erp -> after -> end, start it and let erp fail (422)."""
    receiver.routes[path("erp")] = 422
    await engine.deploy(linear(receiver, **erp), actor="dev")
    iid = await engine.start("orders", form={"orderId": ORDER}, initiator="ann")
    await run_due_jobs(db, clock)
    return iid


async def _trigger_job(db: Database, iid: int) -> dict[str, Any]:
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    return job


async def _policies(db: Database, iid: int) -> list[tuple[str, str]]:
    return [
        (e["node_key"], e["detail"].get("policy"))
        for e in await trace_events(db, iid)
        if e["event"] == "node_failed"
    ]


def _states(rows: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    return [(t["node_key"], t["kind"], t["assignee"], t["status"]) for t in rows]


async def test_continue_passes_the_node_with_a_resolved_ticket_C1(
    db: Database, clock: ManualClock, engine: Engine, receiver: Receiver, outbound_env: Settings
) -> None:
    iid = await _failed(
        engine, db, clock, receiver, maxRetries=1, failurePolicy={"action": "continue"}
    )
    assert len(requests_to(receiver, "/erp/")) == 1  # 1st attempt; retry after backoff
    clock.advance(seconds=30)
    await run_due_jobs(db, clock)
    assert len(requests_to(receiver, "/erp/")) == 2  # maxRetries 1: two attempts
    row = await instance(db, iid)
    assert (row["status"], row["error"]) == ("running", None)
    assert _states(await tasks(db, iid)) == [
        ("erp", "trigger", "system", "completed"),
        ("after", "handle", "hal", "pending"),
    ]
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["after"]
    (ticket,) = await tickets_of(db, iid)
    assert (ticket["kind"], ticket["status"], ticket["compensation_action_status"]) == (
        "continue",
        "resolved",
        "none",
    )
    assert ticket["failed_node_key"] == "erp" and "422" in ticket["error"]
    assert ticket["resolved_at"] is not None and ticket["repair_task_id"] is None
    assert await history_kinds(db, ticket["id"]) == ["created"]
    job = await _trigger_job(db, iid)
    assert (job["status"], job["attempts"], job["max_attempts"]) == ("dead", 2, 2)
    assert await action_jobs(db, iid) == []
    assert await _policies(db, iid) == [("erp", "continue")]


async def test_retry_uses_the_budget_then_opens_manual_repair_C1_C3(
    db: Database,
    clock: ManualClock,
    engine: Engine,
    receiver: Receiver,
    outbound_env: Settings,
    api: Api,
) -> None:
    iid = await _failed(
        engine, db, clock, receiver, maxRetries=2, failurePolicy={"action": "retry"}
    )
    for attempts in (1, 2):
        assert len(requests_to(receiver, "/erp/")) == attempts
        assert await tickets_of(db, iid) == []  # not failed yet: the ledger retries
        assert (await tasks(db, iid, node_key="erp"))[0]["status"] == "waiting"
        clock.advance(seconds=3600)  # past the backoff
        await run_due_jobs(db, clock)
    assert len(requests_to(receiver, "/erp/")) == 3  # maxRetries + 1
    job = await _trigger_job(db, iid)
    assert (job["status"], job["attempts"], job["max_attempts"]) == ("dead", 3, 3)

    row = await instance(db, iid)
    assert row["status"] == "running"
    assert _states(await tasks(db, iid)) == [
        ("erp", "trigger", "system", "completed"),
        ("erp", "catch", "alice", "pending"),
        ("erp", "catch", "bob", "pending"),
    ]
    [token] = await tokens(db, iid, "active")
    assert token["node_key"] == "erp"
    (ticket,) = await tickets_of(db, iid)
    assert (ticket["kind"], ticket["status"], ticket["compensation_action_status"]) == (
        "retry",
        "pending",
        "none",
    )
    alice = await pending_task(db, iid, "erp", "alice")
    assert ticket["repair_task_id"] == alice
    assert await history_kinds(db, ticket["id"]) == ["created"]
    assert await action_jobs(db, iid) == []
    failed = [e for e in await trace_events(db, iid) if e["event"] == "node_failed"]
    assert [(e["detail"]["policy"], e["detail"]["retriesExhausted"]) for e in failed] == [
        ("retry", True)
    ]

    # bob handles his copy of the repair task through the task API
    bob = await pending_task(db, iid, "erp", "bob")
    response = await api.client.post(
        f"/api/workflows/tasks/{bob}/handle",
        headers=await api.token("bob", TASK_ACT),
        json={"comment": "re-sent by hand"},
    )
    assert response.status_code == 200, response.text
    (ticket,) = await tickets_of(db, iid)
    assert ticket["status"] == "resolved"
    assert await history_kinds(db, ticket["id"]) == ["created", "resume"]
    assert _states(await tasks(db, iid, kind="catch")) == [
        ("erp", "catch", "alice", "canceled"),
        ("erp", "catch", "bob", "completed"),
    ]
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["after"]


async def test_compensate_enqueues_the_rendered_reverse_action_and_repair_C1_C4_C5(
    db: Database,
    clock: ManualClock,
    engine: Engine,
    receiver: Receiver,
    outbound_env: Settings,
    api: Api,
) -> None:
    iid = await _failed(
        engine,
        db,
        clock,
        receiver,
        maxRetries=0,
        compensation=undo(receiver, "erp"),
        failurePolicy={"action": "compensate"},
    )
    row = await instance(db, iid)
    assert row["status"] == "running"
    assert _states(await tasks(db, iid)) == [
        ("erp", "trigger", "system", "completed"),
        ("erp", "catch", "alice", "pending"),
        ("erp", "catch", "bob", "pending"),
    ]
    [token] = await tokens(db, iid, "active")
    assert token["node_key"] == "erp"
    (ticket,) = await tickets_of(db, iid)
    assert (ticket["kind"], ticket["status"]) == ("compensate", "pending")
    # the action ran and succeeded; success does not close the ticket (C-5)
    assert ticket["compensation_action_status"] == "succeeded"
    assert ticket["action_payload"]["url"].endswith("/undo/erp/{{form.orderId}}")
    assert await history_kinds(db, ticket["id"]) == [
        "created",
        "action_result",  # pending (enqueued)
        "action_result",  # running
        "action_result",  # succeeded
    ]
    (action,) = await action_jobs(db, iid)
    assert (action["status"], action["max_attempts"], action["node_key"]) == (
        "succeeded",
        1,
        "erp",
    )
    assert ticket["action_job_id"] == action["id"]
    assert action["payload"]["ticketId"] == ticket["id"]
    (undone,) = requests_to(receiver, "/undo/")
    assert (undone.method, undone.path) == ("POST", "/undo/erp/A%2F1")
    assert (undone.headers["x-node"], undone.headers["x-instance"]) == ("erp", str(iid))
    assert undone.body == undo_body(iid, "erp", ticket["error"])
    assert (await _trigger_job(db, iid))["status"] == "dead"
    assert await _policies(db, iid) == [("erp", "compensate")]
    assert (await pending_task(db, iid, "erp", "alice")) == ticket["repair_task_id"]

    # alice handles the repair task: the flow continues, the ticket is resolved
    response = await api.client.post(
        f"/api/workflows/tasks/{ticket['repair_task_id']}/handle",
        headers=await api.token("alice", TASK_ACT),
        json={},
    )
    assert response.status_code == 200, response.text
    (ticket,) = await tickets_of(db, iid)
    assert (ticket["status"], ticket["resolved_by"]) == ("resolved", "alice")
    assert await history_kinds(db, ticket["id"]) == ["created"] + ["action_result"] * 3 + ["resume"]
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["after"]
    assert len(await action_jobs(db, iid)) == 1  # nothing enqueued again


async def test_fallback_node_wins_over_the_fallback_action_C1_C2(
    db: Database, clock: ManualClock, engine: Engine, receiver: Receiver, outbound_env: Settings
) -> None:
    policy = {
        "action": "fallback",
        "fallbackNodeKey": "alt",
        "fallbackAction": undo(receiver, "alternate"),
    }
    iid = await _failed(engine, db, clock, receiver, maxRetries=0, failurePolicy=policy)
    row = await instance(db, iid)
    assert (row["status"], row["error"]) == ("running", None)
    assert _states(await tasks(db, iid)) == [
        ("erp", "trigger", "system", "completed"),
        ("alt", "handle", "fay", "pending"),
    ]
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["alt"]
    (ticket,) = await tickets_of(db, iid)
    assert (ticket["kind"], ticket["status"], ticket["compensation_action_status"]) == (
        "fallback",
        "resolved",
        "none",
    )
    assert ticket["action_job_id"] is None
    assert await history_kinds(db, ticket["id"]) == ["created"]
    assert await action_jobs(db, iid) == []  # the node won: no alternate action
    assert requests_to(receiver, "/undo/") == []
    assert await _policies(db, iid) == [("erp", "fallback")]
    await engine.handle(await pending_task(db, iid, "alt"), actor="fay")
    assert (await instance(db, iid))["status"] == "approved"


async def test_fallback_action_moves_on_at_once_and_resolves_while_pending_C1_C2(
    db: Database,
    clock: ManualClock,
    engine: Engine,
    receiver: Receiver,
    outbound_env: Settings,
    api: Api,
    people: People,
) -> None:
    # the alternate action is a GET whose receiver is busy (503) at first
    alternate = undo(receiver, "alternate", httpMethod="GET", bodyTemplate=None, maxRetries=2)
    receiver.routes["/undo/alternate/A%2F1"] = 503
    policy = {"action": "fallback", "fallbackAction": alternate}
    iid = await _failed(engine, db, clock, receiver, maxRetries=0, failurePolicy=policy)
    # the flow did not wait for the action
    assert _states(await tasks(db, iid)) == [
        ("erp", "trigger", "system", "completed"),
        ("after", "handle", "hal", "pending"),
    ]
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["after"]
    (action,) = await action_jobs(db, iid)
    assert (action["status"], action["attempts"], action["max_attempts"]) == ("pending", 1, 3)
    (ticket,) = await tickets_of(db, iid)
    assert (ticket["kind"], ticket["status"], ticket["compensation_action_status"]) == (
        "fallback",
        "pending",
        "pending",
    )
    assert ticket["action_job_id"] == action["id"] and ticket["repair_task_id"] is None
    # the enqueue and the move on are one step: failed, enqueued, left, entered
    trace = [
        (e["event"], e["node_key"], (e["detail"] or {}).get("type"))
        for e in await trace_events(db, iid)
        if e["event"] != "event_emitted"
    ]
    failed = trace.index(("node_failed", "erp", None))
    assert trace[failed + 1 : failed + 4] == [
        ("job_enqueued", "erp", "compensation_action"),
        ("node_left", "erp", None),
        ("node_entered", "after", None),
    ]

    response = await api.post(
        f"/compensation/{ticket['id']}/resolve", people.ops, {"action": "resolve"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["status"], body["compensationActionStatus"]) == ("resolved", "pending")
    assert (await action_jobs(db, iid))[0]["status"] == "pending"

    receiver.routes["/undo/alternate/A%2F1"] = 200
    clock.advance(seconds=3600)
    await run_due_jobs(db, clock)
    (ticket,) = await tickets_of(db, iid)
    assert (ticket["status"], ticket["compensation_action_status"]) == ("resolved", "succeeded")
    assert [r.method for r in requests_to(receiver, "/undo/alternate/")] == ["GET", "GET"]
    kinds = await history_kinds(db, ticket["id"])
    assert kinds[0] == "created" and "release" in kinds and kinds[-1] == "action_result"
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["after"]


async def test_notify_opens_repair_and_messages_every_admin_C1_C3_X7(
    db: Database,
    clock: ManualClock,
    engine: Engine,
    receiver: Receiver,
    outbound_env: Settings,
    api: Api,
    people: People,
) -> None:
    iid = await _failed(
        engine, db, clock, receiver, maxRetries=0, failurePolicy={"action": "notify"}
    )
    assert (await instance(db, iid))["status"] == "running"
    catch = await tasks(db, iid, kind="catch")
    assert _states(catch) == [
        ("erp", "catch", "alice", "pending"),
        ("erp", "catch", "bob", "pending"),
    ]
    [token] = await tokens(db, iid, "active")
    assert token["node_key"] == "erp" and {t["token_id"] for t in catch} == {token["id"]}
    (ticket,) = await tickets_of(db, iid)
    assert (ticket["kind"], ticket["status"], ticket["compensation_action_status"]) == (
        "notify",
        "pending",
        "none",
    )
    assert await history_kinds(db, ticket["id"]) == ["created"]
    assert await action_jobs(db, iid) == []
    messages = await messages_to(db, "alice", "bob")
    assert [(m["recipient"], m["kind"], m["link"]) for m in messages] == [
        ("alice", "repair_needed", f"/tasks/{catch[0]['id']}"),
        ("bob", "repair_needed", f"/tasks/{catch[1]['id']}"),
    ]
    assert all("erp" in m["title"] and "422" in m["body"] for m in messages)
    notices = [e for e in await outbox(db, iid) if e["event_type"] == "task.repair_needed"]
    assert [(e["payload"]["assignee"], e["payload"]["taskId"]) for e in notices] == [
        ("alice", catch[0]["id"]),
        ("bob", catch[1]["id"]),
    ]
    assert await _policies(db, iid) == [("erp", "notify")]

    response = await api.post(f"/compensation/{ticket['id']}/resume", people.ops)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "resolved"
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["after"]
    await engine.handle(await pending_task(db, iid, "after"), actor="hal")
    assert (await instance(db, iid))["status"] == "approved"


async def test_terminate_rejects_the_instance_with_a_terminated_ticket_C1(
    db: Database, clock: ManualClock, engine: Engine, receiver: Receiver, outbound_env: Settings
) -> None:
    iid = await _failed(
        engine, db, clock, receiver, maxRetries=0, failurePolicy={"action": "terminate"}
    )
    row = await instance(db, iid)
    assert row["status"] == "rejected" and row["error"].startswith("erp: ")
    assert row["finished_at"] is not None
    assert _states(await tasks(db, iid)) == [("erp", "trigger", "system", "completed")]
    assert await tokens(db, iid, "active") == []
    (ticket,) = await tickets_of(db, iid)
    assert (ticket["kind"], ticket["status"], ticket["compensation_action_status"]) == (
        "terminate",
        "terminated",
        "none",
    )
    assert ticket["resolved_at"] is not None
    assert await history_kinds(db, ticket["id"]) == ["created"]
    assert await action_jobs(db, iid) == []
    assert (await _trigger_job(db, iid))["status"] == "dead"
    finished = [e for e in await trace_events(db, iid) if e["event"] == "instance_finished"]
    assert [e["detail"]["status"] for e in finished] == ["rejected"]
    assert await _policies(db, iid) == [("erp", "terminate")]
