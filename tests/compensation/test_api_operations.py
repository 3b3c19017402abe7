"""Ticket operations (SPEC C-9, A-2, A-3): resume, retry and resolve /
terminate — each in its allowed and refused states (409 with a clear code),
refused without workflow:engine:operate (403) and across tenants (404), and
each writing its history row and its audit row."""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import update

from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.clock import ManualClock
from flowledger.compensation.tickets import open_ticket, update_ticket
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_tasks
from flowledger.engine import Engine
from tests.api.conftest import Api, People
from tests.compensation.flows import (
    audit_rows,
    deploy,
    failed_instance,
    history,
    repair_at,
    ticket,
)
from tests.integration.engine_helpers import instance, jobs, pending_task, run_due_jobs, tasks
from tests.integration.engine_helpers import tokens as token_rows
from tests.ledger_access import ledger_of

EMAIL = {"type": "email", "recipients": ["ops@example.com"], "maxRetries": 0}


async def _pending(
    engine: Engine, db: Database, clock: ManualClock, *, action: dict[str, Any] | None = None
) -> tuple[int, int]:
    await deploy(engine)
    iid = await failed_instance(engine, db, clock)
    ticket_id = await repair_at(engine, iid, action=action, enqueue=action is not None)
    assert ticket_id is not None
    return iid, ticket_id


def _refused(response: Any, status: int, code: str) -> None:
    assert response.status_code == status, response.text
    assert response.json()["code"] == code, response.text


async def _last_audit(db: Database, ticket_id: int) -> dict[str, Any]:
    return (await audit_rows(db, ticket_id))[-1]


async def test_resume_continues_past_the_failed_node_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    iid, ticket_id = await _pending(engine, db, clock)
    response = await api.post(f"/compensation/{ticket_id}/resume", people.ops, {"reason": "fixed"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert (body["status"], body["resolvedBy"]) == ("resolved", "ops")
    assert [(t["assignee"], t["status"]) for t in body["repairTasks"]] == [
        ("alice", "completed"),
        ("bob", "canceled"),
    ]
    assert body["history"][-1]["kind"] == "resume" and body["history"][-1]["message"] == "fixed"
    [token] = await token_rows(db, iid, state="active")
    assert token["node_key"] == "after"
    await engine.handle(await pending_task(db, iid, "after"), actor="hal")
    assert (await instance(db, iid))["status"] == "approved"
    audit = await _last_audit(db, ticket_id)
    assert (audit["action"], audit["result"], audit["actor"]) == (
        "compensation.resume",
        "ok",
        "ops",
    )
    assert (audit["reason"], audit["tenant_id"]) == ("fixed", "default")
    again = await api.post(f"/compensation/{ticket_id}/resume", people.ops)
    _refused(again, 409, "ticket_not_pending")
    refused = await _last_audit(db, ticket_id)
    assert (refused["result"], refused["detail"]["code"]) == ("failed", "ticket_not_pending")


async def test_two_operators_resuming_at_once_continue_the_flow_once_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    # both requests race for the instance row (locked first); the second sees
    # a resolved ticket: one 200, one 409, one token moved on
    iid, ticket_id = await _pending(engine, db, clock)
    url = f"/compensation/{ticket_id}/resume"
    first, second = await asyncio.gather(
        api.post(url, people.ops, {"reason": "a"}), api.post(url, people.root, {"reason": "b"})
    )
    assert sorted([first.status_code, second.status_code]) == [200, 409]
    refused = first if first.status_code == 409 else second
    assert refused.json()["code"] == "ticket_not_pending"
    assert [t["node_key"] for t in await token_rows(db, iid, state="active")] == ["after"]
    assert [h["kind"] for h in await history(db, ticket_id)].count("resume") == 1
    assert len(await tasks(db, iid, status="pending", node_key="after")) == 1


async def test_resume_needs_a_running_instance_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    iid, ticket_id = await _pending(engine, db, clock)
    await engine.suspend(iid, actor="ops")
    _refused(
        await api.post(f"/compensation/{ticket_id}/resume", people.ops), 409, "instance_suspended"
    )
    assert (await ticket(db, ticket_id))["status"] == "pending"
    assert [h["kind"] for h in await history(db, ticket_id)] == ["created"]
    await engine.resume(iid, actor="ops")
    response = await api.post(f"/compensation/{ticket_id}/resume", people.ops)
    assert response.status_code == 200, response.text


async def test_resume_refuses_ended_instances_and_tickets_without_repair_task_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    iid, ticket_id = await _pending(engine, db, clock)
    async with db.begin() as conn:
        bare, _ = await open_ticket(
            conn,
            tenant_id="default",
            instance_id=iid,
            failed_node_key="sub",
            node_key="sub",
            kind="fallback",
            error="x",
            action=None,
            repair_task_id=None,
            idempotency_key=None,
            actor="system",
            now=clock.now(),
        )
    _refused(
        await api.post(f"/compensation/{bare}/resume", people.ops), 409, "ticket_not_resumable"
    )
    await engine.cancel(iid, actor="ops")
    # the repair ticket was terminated with its instance; the bare one is
    # still pending, but its instance no longer runs
    _refused(
        await api.post(f"/compensation/{ticket_id}/resume", people.ops), 409, "ticket_not_pending"
    )
    _refused(
        await api.post(f"/compensation/{bare}/resume", people.ops), 409, "instance_not_running"
    )
    response = await api.post(f"/compensation/{bare}/resolve", people.ops, {"action": "terminate"})
    assert response.status_code == 200, response.text
    assert (response.json()["status"], response.json()["instanceStatus"]) == (
        "terminated",
        "canceled",
    )


async def test_handling_the_repair_task_resolves_the_ticket_C3_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    _iid, ticket_id = await _pending(engine, db, clock)
    await engine.handle((await ticket(db, ticket_id))["repair_task_id"], actor="alice")
    assert (await ticket(db, ticket_id))["status"] == "resolved"
    _refused(
        await api.post(f"/compensation/{ticket_id}/resume", people.ops), 409, "ticket_not_pending"
    )


async def test_resume_refuses_when_the_repair_task_was_closed_otherwise_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    # the repair tasks closed by other means than the task API (an operator's
    # repair of the instance): nothing is left to continue from
    _iid, ticket_id = await _pending(engine, db, clock)
    task_id = (await ticket(db, ticket_id))["repair_task_id"]
    async with db.begin() as conn:
        await conn.execute(
            update(workflow_tasks).where(workflow_tasks.c.id == task_id).values(status="canceled")
        )
    _refused(
        await api.post(f"/compensation/{ticket_id}/resume", people.ops), 409, "repair_task_closed"
    )
    response = await api.post(
        f"/compensation/{ticket_id}/resolve", people.ops, {"action": "resolve"}
    )
    assert response.status_code == 200 and response.json()["status"] == "resolved"


async def test_release_closes_the_ticket_only_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    iid, ticket_id = await _pending(engine, db, clock)
    body = {"action": "resolve", "reason": "done by hand"}
    response = await api.post(f"/compensation/{ticket_id}/resolve", people.ops, body)
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "resolved"
    assert [t["status"] for t in await tasks(db, iid, kind="catch")] == ["pending", "pending"]
    assert (await instance(db, iid))["status"] == "running"
    assert [t["node_key"] for t in await token_rows(db, iid, state="active")] == ["sub"]
    assert (await history(db, ticket_id))[-1]["kind"] == "release"
    audit = await _last_audit(db, ticket_id)
    assert (audit["action"], audit["result"], audit["reason"]) == (
        "compensation.resolve",
        "ok",
        "done by hand",
    )
    for action in ("resolve", "terminate"):
        again = await api.post(f"/compensation/{ticket_id}/resolve", people.ops, {"action": action})
        _refused(again, 409, "ticket_not_pending")
    bad = await api.post(f"/compensation/{ticket_id}/resolve", people.ops, {"action": "close"})
    _refused(bad, 422, "validation_error")


async def test_terminate_rejects_the_instance_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    await deploy(engine, parallel=True)
    iid = await failed_instance(engine, db, clock)
    ticket_id = await repair_at(engine, iid)
    assert ticket_id is not None
    body = {"action": "terminate", "reason": "vendor gone"}
    response = await api.post(f"/compensation/{ticket_id}/resolve", people.ops, body)
    assert response.status_code == 200, response.text
    assert (response.json()["status"], response.json()["instanceStatus"]) == (
        "terminated",
        "rejected",
    )
    assert (await instance(db, iid))["status"] == "rejected"
    skipped = await tasks(db, iid, status="skipped")
    assert sorted((t["node_key"], t["assignee"]) for t in skipped) == [
        ("desk", "hal"),
        ("sub", "alice"),
        ("sub", "bob"),
    ]
    assert await tasks(db, iid, status="pending") == []
    assert await token_rows(db, iid, state="active") == []
    assert await token_rows(db, iid, state="parked") == []
    last = (await history(db, ticket_id))[-1]
    assert last["kind"] == "terminate" and last["detail"]["instanceStatus"] == "rejected"
    assert (await _last_audit(db, ticket_id))["action"] == "compensation.terminate"
    _refused(
        await api.post(f"/compensation/{ticket_id}/resume", people.ops), 409, "ticket_not_pending"
    )


async def test_retry_needs_a_failed_action_and_enqueues_a_new_job_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    iid, ticket_id = await _pending(engine, db, clock, action=EMAIL)
    _refused(
        await api.post(f"/compensation/{ticket_id}/retry", people.ops), 409, "action_not_failed"
    )
    await run_due_jobs(db, clock)  # no SMTP server: the only attempt fails
    [old] = await jobs(db, iid, type="compensation_action")
    assert old["status"] == "dead"
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "failed"
    response = await api.post(f"/compensation/{ticket_id}/retry", people.ops, {"reason": "again"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["compensationActionStatus"] == "pending" and body["actionJobId"] != old["id"]
    assert body["status"] == "pending"
    old_now, new = await jobs(db, iid, type="compensation_action")
    assert (old_now["status"], old_now["attempts"]) == ("dead", 1)
    assert (new["id"], new["status"], new["max_attempts"]) == (body["actionJobId"], "pending", 1)
    retry = [h for h in body["history"] if h["kind"] == "retry"]
    assert retry[0]["detail"] == {"previousJobId": old["id"], "jobId": new["id"]}
    audit = await _last_audit(db, ticket_id)
    assert (audit["action"], audit["detail"]["jobId"]) == ("compensation.retry", new["id"])
    _refused(
        await api.post(f"/compensation/{ticket_id}/retry", people.ops), 409, "action_not_failed"
    )


async def test_retry_takes_a_dead_job_from_the_ledger_and_needs_a_valid_action_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    iid, ticket_id = await _pending(engine, db, clock, action=EMAIL)
    [job] = await jobs(db, iid, type="compensation_action")
    async with db.begin() as conn:  # an operator skipped the job in the ledger
        await ledger_of(conn).job_cancel(conn, job["id"], now=clock.now())
    # the ticket's summary still says pending; the detail follows the ledger
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "pending"
    shown = (await api.get(f"/compensation/{ticket_id}", people.mon)).json()
    assert (shown["compensationActionStatus"], shown["actionJob"]["status"]) == (
        "failed",
        "canceled",
    )
    listed = (await api.get(f"/compensation/list?instanceId={iid}", people.mon)).json()
    assert [t["compensationActionStatus"] for t in listed["items"]] == ["failed"]
    response = await api.post(f"/compensation/{ticket_id}/retry", people.ops)
    assert response.status_code == 200, response.text
    statuses = [h["detail"].get("status") for h in response.json()["history"]]
    assert statuses[-3:] == ["failed", None, "pending"]  # reconciled, retry, new job
    _iid, bare = await _pending(engine, db, clock)
    async with db.begin() as conn:
        await update_ticket(conn, bare, now=clock.now(), compensation_action_status="failed")
    _refused(await api.post(f"/compensation/{bare}/retry", people.ops), 409, "action_invalid")


async def test_handling_needs_operate_and_a_visible_tenant_A2_A3(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    _iid, ticket_id = await _pending(engine, db, clock)
    otto = await api.token("otto", INSTANCE_MONITOR, ENGINE_OPERATE, tenants=("other",))
    operations: list[tuple[str, dict[str, Any]]] = [
        ("resume", {}),
        ("retry", {}),
        ("resolve", {"action": "resolve"}),
        ("resolve", {"action": "terminate"}),
        ("note", {"message": "hello"}),
    ]
    for name, body in operations:
        path = f"/compensation/{ticket_id}/{name}"
        _refused(await api.post(path, people.mon, body), 403, "forbidden")
        _refused(await api.post(path, otto, body), 404, "compensation_not_found")
    assert (await ticket(db, ticket_id))["status"] == "pending"
    assert [h["kind"] for h in await history(db, ticket_id)] == ["created"]
    audit = await audit_rows(db, ticket_id)
    assert len(audit) == 2 * len(operations)
    assert {a["result"] for a in audit} == {"failed"}
    assert {a["detail"]["code"] for a in audit} == {"forbidden", "compensation_not_found"}
