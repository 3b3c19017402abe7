"""Delays, task timeouts, subprocesses and schedules: engine steps driven by
their ledger jobs (SPEC E-3, E-5, E-9, L-2, L-14), time moved by the clock."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import select

from flowledger.api.auth import create_user
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox
from flowledger.notify.messages import list_messages
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    jobs,
    new_engine,
    pending_task,
    run_due_jobs,
    tasks,
)
from tests.runtime_support import default_engine


def _delay_def() -> dict[str, Any]:
    nodes = [
        START,
        {"key": "wait", "type": "delay", "duration": "PT1H"},
        approval("mgr", "al"),
        END,
    ]
    return definition("d", nodes, [("start", "wait"), ("wait", "mgr"), ("mgr", "end")])


async def test_delay_is_woken_by_its_job_E3(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(_delay_def(), actor="admin")
    iid = await engine.start("d", form={}, initiator="u")
    [wait] = await tasks(db, iid, node_key="wait")
    assert (wait["status"], wait["assignee"]) == ("waiting", "system")
    [job] = await jobs(db, iid, type="delay_wake")
    assert (job["run_at"] - clock.now()).total_seconds() == 3600
    assert await run_due_jobs(db, clock) == 0  # not due yet
    clock.advance(seconds=3600)
    assert await run_due_jobs(db, clock) == 1
    assert [t["status"] for t in await tasks(db, iid, node_key="wait")] == ["completed"]
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["mgr"]
    [job] = await jobs(db, iid, type="delay_wake")
    assert job["status"] == "succeeded"


async def test_suspend_resume_keeps_the_delay_remaining_time_L18(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(_delay_def(), actor="admin")
    iid = await engine.start("d", form={}, initiator="u")
    clock.advance(seconds=600)
    await engine.suspend(iid, actor="admin", reason="audit")
    [job] = await jobs(db, iid, type="delay_wake")
    assert (job["status"], job["paused_remaining_ms"]) == ("paused", 3_000_000)
    clock.advance(seconds=7200)
    assert await run_due_jobs(db, clock) == 0
    await engine.resume(iid, actor="admin")
    [job] = await jobs(db, iid, type="delay_wake")
    assert job["status"] == "pending"
    assert (job["run_at"] - clock.now()).total_seconds() == 3000
    clock.advance(seconds=3000)
    assert await run_due_jobs(db, clock) == 1
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["mgr"]


@pytest.mark.parametrize("action", ["auto_approve", "auto_reject", "notify", "transfer"])
async def test_task_timeout_actions_E5(action: str, db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    timeout = {"after": "PT2H", "action": action}
    if action == "transfer":
        timeout["transferTo"] = "deputy"
        async with db.begin() as conn:  # a transfer names an existing user of the tenant
            await create_user(conn, "deputy", now=clock.now())
    nodes = [START, approval("mgr", "boss", timeout=timeout), END]
    await engine.deploy(definition("to", nodes, [("start", "mgr"), ("mgr", "end")]), actor="a")
    iid = await engine.start("to", form={}, initiator="u")
    [task] = await tasks(db, iid, node_key="mgr")
    assert (task["due_at"] - clock.now()).total_seconds() == 7200
    clock.advance(seconds=7200)
    assert await run_due_jobs(db, clock) == 1
    row = await instance(db, iid)
    [task] = await tasks(db, iid, node_key="mgr")
    expected = {
        "auto_approve": ("approved", "completed", "approve", "boss"),
        "auto_reject": ("rejected", "completed", "reject", "boss"),
        "notify": ("running", "pending", None, "boss"),
        "transfer": ("running", "pending", None, "deputy"),
    }[action]
    assert (row["status"], task["status"], task["action"], task["assignee"]) == expected


async def test_a_notify_timeout_messages_the_assignee_E5_X7(
    db: Database, clock: ManualClock
) -> None:
    # task notifications use the in-app channel (written in the timeout's
    # step) and the task.overdue event that automation rules can mail on
    engine = new_engine(db, clock)
    timeout = {"after": "PT1H", "action": "notify"}
    nodes = [START, approval("mgr", "boss", name="Manager", timeout=timeout), END]
    await engine.deploy(definition("od", nodes, [("start", "mgr"), ("mgr", "end")]), actor="a")
    iid = await engine.start("od", form={}, initiator="u")
    [task] = await tasks(db, iid, node_key="mgr")
    clock.advance(seconds=3600)
    assert await run_due_jobs(db, clock) == 1
    async with db.read() as conn:
        page = await list_messages(conn, recipient="boss")
        events = (
            await conn.execute(
                select(workflow_event_outbox.c.event_type, workflow_event_outbox.c.payload).where(
                    workflow_event_outbox.c.instance_id == iid
                )
            )
        ).all()
    [message] = page.items
    assert (message.kind, message.title, message.link) == (
        "task_overdue",
        "Overdue: Manager",
        f"/tasks/{task['id']}",
    )
    assert message.read_at is None
    overdue = [e.payload for e in events if e.event_type == "task.overdue"]
    assert overdue == [
        {
            "instanceId": iid,
            "definitionKey": "od",
            "taskId": task["id"],
            "assignee": "boss",
            "nodeKey": "mgr",
        }
    ]


@pytest.mark.parametrize("how", ["withdraw", "cancel", "reject"])
async def test_ending_an_instance_cancels_its_advancement_jobs_L22(
    how: str, db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    nodes = [
        START,
        {"key": "fork", "type": "parallel"},
        {"key": "wait", "type": "delay", "duration": "PT1H"},
        approval("mgr", "boss", timeout={"after": "PT1H", "action": "notify"}),
        {"key": "join", "type": "parallel"},
        END,
    ]
    edges = [
        ("start", "fork"),
        ("fork", "wait"),
        ("fork", "mgr"),
        ("wait", "join"),
        ("mgr", "join"),
        ("join", "end"),
    ]
    await engine.deploy(definition("e", nodes, edges), actor="a")
    iid = await engine.start("e", form={}, initiator="u")
    assert sorted(j["type"] for j in await jobs(db, iid, status="pending")) == [
        "delay_wake",
        "task_timeout",
    ]
    if how == "withdraw":
        await engine.withdraw(iid, actor="u")
    elif how == "cancel":
        await engine.cancel(iid, actor="admin", reason="duplicate")
    else:
        await engine.reject(await pending_task(db, iid, "mgr"), actor="boss")
    assert {j["status"] for j in await jobs(db, iid)} == {"canceled"}
    assert (await instance(db, iid))["status"] == {
        "withdraw": "withdrawn",
        "cancel": "canceled",
        "reject": "rejected",
    }[how]
    clock.advance(seconds=7200)
    assert await run_due_jobs(db, clock) == 0


def _child(key: str, inner: str | None) -> dict[str, Any]:
    if inner is None:
        nodes = [START, approval("check", "auditor"), END]
        return definition(
            key,
            nodes,
            [("start", "check"), ("check", "end")],
            [{"key": "vendor", "type": "string"}, {"key": "ok", "type": "boolean"}],
        )
    nodes = [
        START,
        {
            "key": "sub",
            "type": "subprocess",
            "definitionKey": inner,
            "inputMapping": {"vendor": "form.vendor"},
            "outputMapping": {"ok": "form.ok"},
        },
        END,
    ]
    return definition(
        key,
        nodes,
        [("start", "sub"), ("sub", "end")],
        [{"key": "vendor", "type": "string"}, {"key": "ok", "type": "boolean"}],
    )


async def test_subprocess_two_levels_deep_E3(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(_child("leaf", None), actor="a")
    await engine.deploy(_child("middle", "leaf"), actor="a")
    await engine.deploy(_child("top", "middle"), actor="a")
    top = await engine.start("top", form={"vendor": "acme"}, initiator="u")
    assert await run_due_jobs(db, clock) == 2  # spawn middle, middle spawns leaf
    async with db.read() as conn:
        from sqlalchemy import select

        from flowledger.db.engine_schema import workflow_instances as wi

        rows = (
            await conn.execute(
                select(wi.c.id, wi.c.parent_instance_id, wi.c.form_data, wi.c.trace_id).order_by(
                    wi.c.id
                )
            )
        ).all()
    assert [r.parent_instance_id for r in rows] == [None, top, top + 1]
    assert rows[2].form_data == {"vendor": "acme"}
    assert len({r.trace_id for r in rows}) == 1  # one trace across instances (L-12)
    leaf = rows[2].id
    await engine.approve(await pending_task(db, leaf, "check"), actor="auditor", form={"ok": True})
    assert await run_due_jobs(db, clock) == 2  # join middle, then middle joins top
    assert [(await instance(db, i))["status"] for i in (top, top + 1, leaf)] == ["approved"] * 3
    assert (await instance(db, top))["form_data"] == {"vendor": "acme", "ok": True}


async def test_redeploy_keeps_running_instances_on_their_snapshot_E2(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(
        definition("r", [START, approval("one", "al"), END], [("start", "one"), ("one", "end")]),
        actor="a",
    )
    old = await engine.start("r", form={}, initiator="u")
    v2 = await engine.deploy(
        definition(
            "r",
            [START, approval("one", "al"), approval("two", "bo"), END],
            [("start", "one"), ("one", "two"), ("two", "end")],
        ),
        actor="a",
    )
    assert v2["version"] == 2
    await engine.approve(await pending_task(db, old, "one"), actor="al")
    assert (await instance(db, old))["status"] == "approved"  # v1 had no "two"
    new = await engine.start("r", form={}, initiator="u")
    await engine.approve(await pending_task(db, new, "one"), actor="al")
    assert [t["node_key"] for t in await tasks(db, new, status="pending")] == ["two"]
    assert (await instance(db, new))["definition_version"] == 2


async def test_schedule_launches_once_with_two_planners_E9(
    db: Database, db_url: str, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(
        definition("s", [START, approval("one", "al"), END], [("start", "one"), ("one", "end")]),
        actor="a",
    )
    schedule_id = await engine.create_schedule(
        definition_key="s", cron="0 * * * *", form={}, initiator="bot"
    )
    clock.advance(seconds=3600)
    other_db = Database(db_url)
    try:
        other = default_engine(other_db, clock)
        await asyncio.gather(engine.plan_schedules(), other.plan_schedules())
        await asyncio.gather(engine.plan_schedules(), other.plan_schedules())
    finally:
        await other_db.dispose()
    assert await run_due_jobs(db, clock) == 1
    async with db.read() as conn:
        from sqlalchemy import func, select

        from flowledger.db.engine_schema import workflow_instances as wi

        count = (await conn.execute(select(func.count()).select_from(wi))).scalar_one()
    assert count == 1
    await engine.launch_schedule(schedule_id)
    assert await run_due_jobs(db, clock) == 1
    async with db.read() as conn:
        count = (await conn.execute(select(func.count()).select_from(wi))).scalar_one()
    assert count == 2
