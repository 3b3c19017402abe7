"""Reassign and remind (SPEC O-5, X-7). Reassign: 409 ``assignee_conflict``
when the target already holds a pending task at the same node, and two
concurrent reassignments onto the same target serialize on the instance
lock — exactly one wins. Remind (催办): an in-app message to the assignee,
an email through a real SMTP server (aiosmtpd) when SMTP is configured, at
most once per task per 10 minutes (429 with ``retryAfterSeconds`` and
``Retry-After``; two operators at once: one reminder), audited, only for
pending tasks, operators only, tenant scoped. Both backends."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Iterator

import pytest
from aiosmtpd.controller import Controller

from flowledger.db.engine_schema import operation_audit, workflow_messages
from tests.api.conftest import Api, People, approval
from tests.notify.servers import Collector


@pytest.fixture
async def board(api: Api, people: People) -> dict:
    """An instance of a mode-all approval: pending tasks of mia and max."""
    await api.deploy(people.root, approval("board", assignees=["mia", "max"], mode="all"))
    return await api.start(people.ann, "board")


async def test_concurrent_reassignments_onto_one_user_one_wins_O5(
    api: Api, people: People, board: dict
) -> None:
    mia_task, max_task = (t["id"] for t in board["tasks"])
    results = await asyncio.gather(
        api.post(f"/tasks/{mia_task}/reassign", people.ops, {"to": "hal", "reason": "cover"}),
        api.post(f"/tasks/{max_task}/reassign", people.ops, {"to": "hal", "reason": "cover"}),
    )
    codes = sorted(r.status_code for r in results)
    assert codes == [200, 409], [r.text for r in results]
    loser = next(r for r in results if r.status_code == 409)
    assert loser.json()["code"] == "assignee_conflict" and loser.json()["field"] == "to"
    detail = (await api.get(f"/instances/{board['id']}", people.ops)).json()
    pending = sorted(t["assignee"] for t in detail["tasks"] if t["status"] == "pending")
    assert pending.count("hal") == 1 and len(pending) == 2
    audit = [r for r in await api.rows(operation_audit) if r["action"] == "task.reassign"]
    assert sorted(r["result"] for r in audit) == ["failed", "ok"]


async def test_reassign_to_a_holder_of_the_node_is_409_O5(
    api: Api, people: People, board: dict
) -> None:
    mia_task, max_task = (t["id"] for t in board["tasks"])
    response = await api.post(
        f"/tasks/{mia_task}/reassign", people.ops, {"to": "max", "reason": "cover"}
    )
    assert response.status_code == 409 and response.json()["taskId"] == max_task


async def test_remind_posts_a_message_and_is_limited_to_once_per_10_minutes_O5(
    api: Api, people: People
) -> None:
    await api.deploy(people.root, approval())
    task = (await api.start(people.ann))["tasks"][0]["id"]
    response = await api.post(f"/tasks/{task}/remind", people.ops, {"note": "please today"})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["taskId"] == task and body["assignee"] == "mia"
    assert body["email"] == "not_configured"
    messages = await api.rows(workflow_messages)
    assert [(m["recipient"], m["kind"], m["link"]) for m in messages] == [
        ("mia", "task_reminder", f"/tasks/{task}")
    ]
    assert "please today" in messages[0]["body"]
    assert (await api.get("/messages", people.mia)).json()["items"][0]["id"] == body["messageId"]
    api.clock.advance(seconds=4 * 60)
    again = await api.post(f"/tasks/{task}/remind", people.root)
    assert again.status_code == 429, again.text
    assert again.json()["code"] == "remind_too_soon"
    assert again.json()["retryAfterSeconds"] == 6 * 60
    assert again.headers["retry-after"] == "360"
    assert await api.count(workflow_messages) == 1
    api.clock.advance(seconds=6 * 60)
    assert (await api.post(f"/tasks/{task}/remind", people.ops)).status_code == 200
    assert await api.count(workflow_messages) == 2
    audit = [
        (r["action"], r["result"], r["actor"], r["target_id"])
        for r in await api.rows(operation_audit)
        if r["action"] == "task.remind"
    ]
    assert audit == [
        ("task.remind", "ok", "ops", str(task)),
        ("task.remind", "failed", "root", str(task)),
        ("task.remind", "ok", "ops", str(task)),
    ]
    reasons = [r["reason"] for r in await api.rows(operation_audit) if r["action"] == "task.remind"]
    assert reasons == ["please today", None, None]


async def test_two_operators_reminding_at_once_send_one_reminder_O5(
    api: Api, people: People
) -> None:
    await api.deploy(people.root, approval())
    task = (await api.start(people.ann))["tasks"][0]["id"]
    results = await asyncio.gather(
        *(api.post(f"/tasks/{task}/remind", who) for who in (people.ops, people.root) * 2)
    )
    assert sorted(r.status_code for r in results) == [200, 429, 429, 429]
    assert await api.count(workflow_messages) == 1


async def test_remind_refuses_finished_tasks_and_needs_operate_O5(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())
    task = (await api.start(people.ann))["tasks"][0]["id"]
    forbidden = await api.post(f"/tasks/{task}/remind", people.mon)
    assert forbidden.status_code == 403
    assert forbidden.json()["permission"] == "workflow:engine:operate"
    # checked before the body is read
    assert (await api.post(f"/tasks/{task}/remind", people.mon, {"bogus": 1})).status_code == 403
    refusals = [r for r in await api.rows(operation_audit) if r["action"] == "task.remind"]
    assert [(r["result"], r["target_id"]) for r in refusals] == [("failed", str(task))] * 2
    assert (await api.post(f"/tasks/{task}/approve", people.mia)).status_code == 200
    done = await api.post(f"/tasks/{task}/remind", people.ops)
    assert done.status_code == 409 and done.json()["code"] == "task_state"
    olga = await api.token("olga", "workflow:engine:operate", tenants=("other",))
    assert (await api.post(f"/tasks/{task}/remind", olga)).status_code == 404
    assert (await api.post("/tasks/999999/remind", people.ops)).status_code == 404
    assert await api.count(workflow_messages) == 0


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def smtp_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[Collector]:
    handler = Collector()
    controller = Controller(handler, hostname="127.0.0.1", port=_free_port())
    controller.start()
    monkeypatch.setenv("FLOWLEDGER_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("FLOWLEDGER_SMTP_PORT", str(controller.port))
    try:
        yield handler
    finally:
        controller.stop()


async def test_remind_emails_the_assignee_when_smtp_is_configured_O5_X7(
    api: Api, people: People, smtp_env: Collector
) -> None:
    await api.deploy(people.root, approval("mail", assignees=["mia@example.com"]))
    task = (await api.start(people.ann, "mail"))["tasks"][0]["id"]
    response = await api.post(f"/tasks/{task}/remind", people.ops)
    assert response.status_code == 200, response.text
    assert response.json()["email"] == "sent"
    assert [e.rcpt_tos for e in smtp_env.envelopes] == [["mia@example.com"]]
    assert b"Reminder: mail #" in smtp_env.envelopes[0].content
    # a plain user id has no address: the in-app message alone
    await api.deploy(people.root, approval())
    other = (await api.start(people.ann))["tasks"][0]["id"]
    plain = await api.post(f"/tasks/{other}/remind", people.ops)
    assert plain.json()["email"] == "no_address" and len(smtp_env.envelopes) == 1
