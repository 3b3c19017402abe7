"""Compensation actions (SPEC C-4, C-5, C-6, L-17): one compensation_action
job per action with maxAttempts = maxRetries + 1 (4 when unset), templates
rendered from the instance's form data when the job runs, the ticket's
compensationActionStatus following each attempt, against a real HTTP
receiver; success neither closes the ticket nor consumes its repair task."""

from __future__ import annotations

import json
from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.engine.forms import write_form
from flowledger.settings import Settings
from tests.compensation.flows import deploy, failed_instance, history, repair_at, ticket
from tests.integration.engine_helpers import instance, jobs, run_due_jobs, tasks
from tests.outbound.receivers import Receiver


async def _failed(engine: Engine, db: Database, clock: ManualClock) -> int:
    await deploy(engine)
    return await failed_instance(engine, db, clock)


def _statuses(rows: list[dict[str, Any]]) -> list[str]:
    return [r["detail"]["status"] for r in rows if r["kind"] == "action_result"]


@pytest.mark.parametrize(("retries", "budget"), [(None, 4), (0, 1), (2, 3)])
async def test_max_attempts_is_max_retries_plus_one_or_four_C5(
    db: Database, engine: Engine, clock: ManualClock, retries: int | None, budget: int
) -> None:
    iid = await _failed(engine, db, clock)
    action: dict[str, Any] = {"type": "email", "recipients": ["ops@example.com"]}
    if retries is not None:
        action["maxRetries"] = retries
    ticket_id = await repair_at(engine, iid, kind="compensate", action=action, enqueue=True)
    assert ticket_id is not None
    [job] = await jobs(db, iid, type="compensation_action")
    assert job["max_attempts"] == budget and job["status"] == "pending"
    assert job["payload"] == {
        "ticketId": ticket_id,
        "instanceId": iid,
        "nodeKey": "sub",
        "error": "child instance was rejected",
        "action": action,
    }
    row = await ticket(db, ticket_id)
    assert (row["compensation_action_status"], row["action_job_id"]) == ("pending", job["id"])
    assert _statuses(await history(db, ticket_id)) == ["pending"]


async def test_http_action_renders_current_form_and_succeeds_C4_C5(
    db: Database,
    engine: Engine,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    iid = await _failed(engine, db, clock)
    action = {
        "type": "http",
        "url": receiver.url + "/orders/{{form.vendor}}?i={{instanceId}}",
        "httpMethod": "DELETE",
        "headers": {"X-Node": "{{nodeKey}}"},
        "bodyTemplate": (
            '{"error": "{{error}}", "amount": {{form.amount}}, "vendor": "{{form.vendor}}"}'
        ),
    }
    ticket_id = await repair_at(engine, iid, kind="compensate", action=action, enqueue=True)
    assert ticket_id is not None
    # the form changes after the job was enqueued: the job reads it when it runs;
    # a quote in a value stays inside its JSON string (no added keys)
    vendor = 'new "vendor"/1'
    async with db.begin() as conn, engine.step(conn, iid, "ann") as step:
        await write_form(step, {"vendor": vendor, "amount": 99}, source="test")
    assert await run_due_jobs(db, clock) == 1
    [request] = receiver.requests
    assert request.method == "DELETE"
    assert request.path == f"/orders/new%20%22vendor%22%2F1?i={iid}"
    assert request.headers["x-node"] == "sub"
    assert request.headers["content-type"] == "application/json"
    assert request.headers["x-idempotency-key"]
    assert json.loads(request.body) == {
        "error": "child instance was rejected",
        "amount": 99,
        "vendor": vendor,
    }
    [job] = await jobs(db, iid, type="compensation_action")
    assert job["status"] == "succeeded" and job["result"]["status"] == 200
    row = await ticket(db, ticket_id)
    assert (row["status"], row["compensation_action_status"]) == ("pending", "succeeded")
    assert [t["status"] for t in await tasks(db, iid, kind="catch")] == ["pending", "pending"]
    assert _statuses(await history(db, ticket_id)) == ["pending", "running", "succeeded"]


async def test_unsafe_write_without_clear_answer_is_final_and_not_resent_C6_L17(
    db: Database,
    engine: Engine,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.reply = 502
    iid = await _failed(engine, db, clock)
    action = {"type": "http", "url": receiver.url + "/undo", "httpMethod": "POST"}
    ticket_id = await repair_at(engine, iid, kind="compensate", action=action, enqueue=True)
    assert ticket_id is not None
    await run_due_jobs(db, clock)
    clock.advance(seconds=3600)
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 1
    [job] = await jobs(db, iid, type="compensation_action")
    assert (job["status"], job["attempts"]) == ("dead", 1)
    assert job["last_error_code"] == "external_outcome_unconfirmed"
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "failed"
    last = (await history(db, ticket_id))[-1]
    assert last["detail"]["final"] is True and last["detail"]["status"] == "failed"


async def test_retryable_failure_is_pending_until_budget_is_spent_C5(
    db: Database,
    engine: Engine,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.reply = 400
    iid = await _failed(engine, db, clock)
    action = {"type": "http", "url": receiver.url + "/undo", "maxRetries": 1}
    ticket_id = await repair_at(engine, iid, kind="compensate", action=action, enqueue=True)
    assert ticket_id is not None
    await run_due_jobs(db, clock)
    [job] = await jobs(db, iid, type="compensation_action")
    assert (job["status"], job["attempts"]) == ("pending", 1)
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "pending"
    clock.advance(seconds=31)
    await run_due_jobs(db, clock)
    [job] = await jobs(db, iid, type="compensation_action")
    assert (job["status"], job["attempts"]) == ("dead", 2)
    assert len(receiver.requests) == 2
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "failed"
    assert _statuses(await history(db, ticket_id)) == [
        "pending",
        "running",
        "pending",
        "running",
        "failed",
    ]


async def test_http_action_refused_by_ssrf_guard_fails_at_once_X4(
    db: Database, engine: Engine, clock: ManualClock, outbound_env: Settings
) -> None:
    iid = await _failed(engine, db, clock)
    action = {"type": "http", "url": "http://169.254.169.254/latest", "httpMethod": "GET"}
    ticket_id = await repair_at(engine, iid, kind="compensate", action=action, enqueue=True)
    assert ticket_id is not None
    await run_due_jobs(db, clock)
    [job] = await jobs(db, iid, type="compensation_action")
    assert (job["status"], job["attempts"]) == ("dead", 1)
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "failed"
    assert (await instance(db, iid))["status"] == "running"


async def test_http_action_never_takes_its_host_from_form_data_C4_X4(
    db: Database,
    engine: Engine,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    iid = await _failed(engine, db, clock)
    action = {"type": "http", "url": "http://{{form.vendor}}/undo", "httpMethod": "POST"}
    await repair_at(engine, iid, kind="compensate", action=action, enqueue=True)
    async with db.begin() as conn, engine.step(conn, iid, "ann") as step:
        await write_form(step, {"vendor": receiver.endpoint}, source="test")
    await run_due_jobs(db, clock)
    assert receiver.requests == []
    [job] = await jobs(db, iid, type="compensation_action")
    assert (job["status"], job["last_error_code"]) == ("dead", "outbound_refused")
