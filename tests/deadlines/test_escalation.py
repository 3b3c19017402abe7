"""Deadlines and escalation driven by their task_timeout jobs (issue 31
item 4; SPEC E-5): the due time from a duration and from a form field, each
escalation step, and a duplicated job that never transfers twice. Both
backends (the ``db`` fixture)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import update

from flowledger.access.tokens import create_user
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import users
from flowledger.engine.job_types import engine_job_type
from flowledger.ledger.models import JobSpec
from flowledger.notify.messages import list_messages
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    jobs,
    new_engine,
    run_due_jobs,
    tasks,
    trace_events,
)
from tests.ledger_access import enqueue_many

HOUR = 3600


def _deadline_def(key: str, deadline: dict[str, Any]) -> dict[str, Any]:
    nodes = [START, approval("mgr", "boss", name="Manager", deadline=deadline), END]
    form = [{"key": "dueDate", "type": "date"}]
    return definition(key, nodes, [("start", "mgr"), ("mgr", "end")], form)


CHAIN = {
    "due": "PT2H",
    "escalation": [
        {"after": "PT1H", "action": "remind"},
        {"after": "PT2H", "action": "transfer", "to": "manager"},
        {"after": "PT3H", "action": "notify_admin"},
    ],
}


async def _people(db: Database, clock: ManualClock) -> None:
    async with db.begin() as conn:
        await create_user(conn, "boss", now=clock.now())
        await create_user(conn, "chief", now=clock.now())
        await create_user(conn, "root", roles=["workflow_admin"], now=clock.now())
        await create_user(conn, "fin1", roles=["finance"], now=clock.now())
        await conn.execute(update(users).where(users.c.id == "boss").values(manager_id="chief"))


async def _start(db: Database, clock: ManualClock, deadline: dict[str, Any], form: Any = None):  # type: ignore[no-untyped-def]
    engine = new_engine(db, clock)
    await _people(db, clock)
    await engine.deploy(_deadline_def("dl", deadline), actor="a")
    iid = await engine.start("dl", form=form or {}, initiator="u")
    [task] = await tasks(db, iid, node_key="mgr")
    return engine, iid, task


async def _escalations(db: Database, iid: int) -> list[dict[str, Any]]:
    return [e["detail"] for e in await trace_events(db, iid) if e["event"] == "deadline_escalation"]


async def test_due_from_a_duration_and_the_whole_chain(db: Database, clock: ManualClock) -> None:
    _engine, iid, task = await _start(db, clock, CHAIN)
    assert (task["due_at"] - clock.now()).total_seconds() == 2 * HOUR
    [job] = await jobs(db, iid, type="task_timeout")
    assert job["payload"] == {"taskId": task["id"], "deadlineStep": 0}
    assert job["run_at"] == task["due_at"]
    assert await run_due_jobs(db, clock) == 0

    clock.advance(seconds=2 * HOUR)  # due: overdue, nothing else
    assert await run_due_jobs(db, clock) == 1
    [task] = await tasks(db, iid, node_key="mgr")
    assert (task["escalation_step"], task["escalated_at"]) == (0, None)
    assert "task_overdue" in [e["event"] for e in await trace_events(db, iid)]

    clock.advance(seconds=HOUR)  # remind the assignee
    assert await run_due_jobs(db, clock) == 1
    async with db.read() as conn:
        [message] = (await list_messages(conn, recipient="boss")).items
    assert message.kind == "task_overdue"
    [task] = await tasks(db, iid, node_key="mgr")
    assert (task["escalation_step"], task["assignee"], task["escalated_at"]) == (1, "boss", None)

    clock.advance(seconds=HOUR)  # transfer to boss's manager
    assert await run_due_jobs(db, clock) == 1
    [task] = await tasks(db, iid, node_key="mgr")
    assert (task["escalation_step"], task["assignee"], task["status"]) == (2, "chief", "pending")
    escalated_at = task["escalated_at"]
    assert escalated_at is not None

    clock.advance(seconds=HOUR)  # tell the administrators
    assert await run_due_jobs(db, clock) == 1
    async with db.read() as conn:
        [notice] = (await list_messages(conn, recipient="root")).items
    assert (notice.kind, notice.title) == ("task_escalated", "Escalated: Manager")
    [task] = await tasks(db, iid, node_key="mgr")
    assert task["escalation_step"] == 3
    assert task["escalated_at"] == escalated_at  # the first escalation's time
    assert [d["action"] for d in await _escalations(db, iid)] == [
        "remind",
        "transfer",
        "notify_admin",
    ]
    assert {j["status"] for j in await jobs(db, iid, type="task_timeout")} == {"succeeded"}
    clock.advance(seconds=100 * HOUR)
    assert await run_due_jobs(db, clock) == 0  # the chain is over


async def test_due_from_a_form_field(db: Database, clock: ManualClock) -> None:
    due = (clock.now() + timedelta(days=2)).replace(microsecond=0)
    deadline = {"dueField": "dueDate", "escalation": [{"after": "PT0S", "action": "remind"}]}
    _engine, iid, task = await _start(db, clock, deadline, {"dueDate": due.isoformat()})
    assert task["due_at"] == due
    clock.advance(seconds=2 * 24 * HOUR)
    assert await run_due_jobs(db, clock) == 2  # overdue, then the remind at once
    [task] = await tasks(db, iid, node_key="mgr")
    assert task["escalation_step"] == 1


async def test_a_date_alone_is_its_midnight_and_no_value_means_no_due(
    db: Database, clock: ManualClock
) -> None:
    engine, _iid, task = await _start(db, clock, {"dueField": "dueDate"}, {"dueDate": "2031-05-04"})
    assert task["due_at"] == datetime(2031, 5, 4, tzinfo=UTC)
    other = await engine.start("dl", form={}, initiator="u")
    [task] = await tasks(db, other, node_key="mgr")
    assert task["due_at"] is None
    assert await jobs(db, other, type="task_timeout") == []
    assert "deadline_unresolved" in [e["event"] for e in await trace_events(db, other)]


async def test_transfer_to_a_named_user_and_to_a_role(db: Database, clock: ManualClock) -> None:
    for key, to, expected in (("u", "user:chief", "chief"), ("r", "role:finance", "fin1")):
        engine = new_engine(db, clock)
        if key == "u":
            await _people(db, clock)
        chain = {"due": "PT1H", "escalation": [{"after": "PT0S", "action": "transfer", "to": to}]}
        await engine.deploy(_deadline_def(key, chain), actor="a")
        iid = await engine.start(key, form={}, initiator="u")
        clock.advance(seconds=HOUR)
        assert await run_due_jobs(db, clock) == 2
        [task] = await tasks(db, iid, node_key="mgr")
        assert (task["assignee"], task["escalation_step"]) == (expected, 1)
        assert task["escalated_at"] == clock.now()


async def test_a_manager_transfer_without_a_manager_is_skipped(
    db: Database, clock: ManualClock
) -> None:
    chain = {
        "due": "PT1H",
        "escalation": [{"after": "PT0S", "action": "transfer", "to": "manager"}],
    }
    engine = new_engine(db, clock)
    async with db.begin() as conn:
        await create_user(conn, "boss", now=clock.now())
    await engine.deploy(_deadline_def("nm", chain), actor="a")
    iid = await engine.start("nm", form={}, initiator="u")
    clock.advance(seconds=HOUR)
    assert await run_due_jobs(db, clock) == 2
    [task] = await tasks(db, iid, node_key="mgr")
    assert (task["assignee"], task["escalation_step"], task["escalated_at"]) == ("boss", 1, None)
    [detail] = await _escalations(db, iid)
    assert detail["skipped"] == "no such user in the tenant"


async def _duplicate(db: Database, clock: ManualClock, job: dict[str, Any]) -> None:
    spec = JobSpec(
        type=engine_job_type("task_timeout"),
        payload=job["payload"],
        run_at=clock.now(),
        tenant_id=job["tenant_id"],
        instance_id=job["instance_id"],
        task_id=job["task_id"],
        node_key=job["node_key"],
    )
    async with db.begin() as conn:
        await enqueue_many(conn, [spec], now=clock.now())


async def test_a_duplicated_transfer_job_transfers_once(db: Database, clock: ManualClock) -> None:
    chain = {
        "due": "PT1H",
        "escalation": [
            {"after": "PT1H", "action": "transfer", "to": "manager"},
            {"after": "PT2H", "action": "notify_admin"},
        ],
    }
    _engine, iid, task = await _start(db, clock, chain)
    clock.advance(seconds=HOUR)
    assert await run_due_jobs(db, clock) == 1
    clock.advance(seconds=HOUR)
    [_, transfer] = await jobs(db, iid, type="task_timeout")
    assert transfer["payload"]["deadlineStep"] == 1
    # two copies due with the original: all three run, one transfers
    await _duplicate(db, clock, transfer)
    await _duplicate(db, clock, transfer)
    assert await run_due_jobs(db, clock) == 3
    [task] = await tasks(db, iid, node_key="mgr")
    assert (task["assignee"], task["escalation_step"]) == ("chief", 1)
    transferred = [e for e in await trace_events(db, iid) if e["event"] == "task_transferred"]
    assert len(transferred) == 1
    step1 = [
        j for j in await jobs(db, iid, type="task_timeout") if j["payload"].get("deadlineStep") == 1
    ]
    results = sorted(str(j["result"]) for j in step1)
    assert sum("already done" in r for r in results) == 2, results
    # the next step was enqueued once (its key), and a later copy of the
    # finished transfer is skipped too
    assert (
        len([j for j in await jobs(db, iid, type="task_timeout") if j["status"] == "pending"]) == 1
    )
    await _duplicate(db, clock, transfer)
    assert await run_due_jobs(db, clock) == 1
    [task] = await tasks(db, iid, node_key="mgr")
    assert task["assignee"] == "chief"
    assert len([e for e in await trace_events(db, iid) if e["event"] == "task_transferred"]) == 1


async def test_a_recreated_job_without_a_step_runs_the_next_one(
    db: Database, clock: ManualClock
) -> None:
    _engine, iid, task = await _start(db, clock, CHAIN)
    [first] = await jobs(db, iid, type="task_timeout")
    clock.advance(seconds=2 * HOUR)
    await _duplicate(db, clock, {**first, "payload": {"taskId": task["id"]}})
    assert await run_due_jobs(db, clock) == 2  # the step-less copy and the keyed job
    [task] = await tasks(db, iid, node_key="mgr")
    assert task["escalation_step"] == 0
    assert len([e for e in await trace_events(db, iid) if e["event"] == "task_overdue"]) == 1
