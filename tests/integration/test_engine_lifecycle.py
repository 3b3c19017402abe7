"""Instance lifecycle, task rules and concurrency (SPEC E-4, E-6, E-7, L-13)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import update

from flowledger.api.auth import create_user
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_tokens
from flowledger.engine import Engine
from flowledger.engine.errors import (
    FormInvalidError,
    InstanceStateError,
    TaskStateError,
    TaskWithoutToken,
)
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    new_engine,
    pending_task,
    tasks,
    tokens,
    trace_events,
)
from tests.runtime_support import default_engine

FORM = [{"key": "amount", "type": "number", "required": True}, {"key": "vendor", "type": "string"}]


async def _simple(engine: Engine) -> None:
    await engine.deploy(
        definition(
            "p", [START, approval("mgr", "boss"), END], [("start", "mgr"), ("mgr", "end")], FORM
        ),
        actor="a",
    )


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ({}, "form.amount"),
        ({"amount": "ten"}, "form.amount"),
        ({"amount": 1, "colour": "red"}, "form.colour"),
        ({"amount": 1, "vendor": 7}, "form.vendor"),
    ],
)
async def test_form_is_validated_on_start_and_nothing_is_written_E7(
    form: dict, field: str, db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await _simple(engine)
    with pytest.raises(FormInvalidError) as info:
        await engine.start("p", form=form, initiator="u")
    assert info.value.field == field
    async with db.read() as conn:
        from sqlalchemy import func, select

        from flowledger.db.engine_schema import workflow_instances

        assert (
            await conn.execute(select(func.count()).select_from(workflow_instances))
        ).scalar_one() == 0


async def test_form_writes_on_approval_are_validated_and_recorded_E7(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await _simple(engine)
    iid = await engine.start("p", form={"amount": 5}, initiator="u")
    task = await pending_task(db, iid, "mgr")
    with pytest.raises(FormInvalidError):
        await engine.approve(task, actor="boss", form={"amount": "x"})
    assert (await instance(db, iid))["status"] == "running"  # nothing half-written
    await engine.approve(task, actor="boss", form={"vendor": "acme"})
    assert (await instance(db, iid))["form_data"] == {"amount": 5, "vendor": "acme"}


async def test_return_to_initiator_and_resubmit_E6(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await _simple(engine)
    iid = await engine.start("p", form={"amount": 5}, initiator="carol")
    first = await pending_task(db, iid, "mgr")
    resubmit = await engine.return_to_initiator(iid, actor="boss", reason="missing receipt")
    [task] = await tasks(db, iid, status="pending")
    assert (task["id"], task["kind"], task["assignee"], task["node_key"]) == (
        resubmit,
        "resubmit",
        "carol",
        "start",
    )
    assert [t["status"] for t in await tasks(db, iid, node_key="mgr")] == ["canceled"]
    with pytest.raises(TaskStateError):
        await engine.approve(first, actor="boss")
    with pytest.raises(TaskStateError, match=r"kind resubmit: it takes handle, not approve"):
        await engine.approve(resubmit, actor="carol")
    await engine.handle(resubmit, actor="carol", form={"vendor": "acme"})
    await engine.approve(await pending_task(db, iid, "mgr"), actor="boss")
    assert (await instance(db, iid))["status"] == "approved"


async def test_an_instance_is_returned_once_E6(db: Database, clock: ManualClock) -> None:
    """Two operators returning the same instance at once (or one repeating
    it): one return; the other is refused with instance_state while the
    resubmission task is pending, and no second task or event is made."""
    engine = new_engine(db, clock)
    await _simple(engine)
    iid = await engine.start("p", form={"amount": 5}, initiator="carol")
    results = await asyncio.gather(
        engine.return_to_initiator(iid, actor="boss", reason="one"),
        engine.return_to_initiator(iid, actor="olivia", reason="two"),
        return_exceptions=True,
    )
    returned = [r for r in results if isinstance(r, int)]
    refused = [r for r in results if isinstance(r, InstanceStateError)]
    assert len(returned) == 1 and len(refused) == 1, results
    assert "already returned" in str(refused[0])
    with pytest.raises(InstanceStateError, match="already returned"):
        await engine.return_to_initiator(iid, actor="boss", reason="again")
    [task] = await tasks(db, iid, status="pending")
    assert (task["id"], task["kind"]) == (returned[0], "resubmit")
    assert [t["kind"] for t in await tasks(db, iid)].count("resubmit") == 1
    assert [e["event"] for e in await trace_events(db, iid)].count("instance_returned") == 1
    # resubmitted, it can be returned again
    await engine.handle(returned[0], actor="carol", form={"vendor": "acme"})
    again = await engine.return_to_initiator(iid, actor="boss", reason="still missing")
    assert [t["id"] for t in await tasks(db, iid, status="pending")] == [again]


async def test_suspended_instance_refuses_task_actions_until_resumed_E6(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await _simple(engine)
    iid = await engine.start("p", form={"amount": 5}, initiator="carol")
    task = await pending_task(db, iid, "mgr")
    await engine.suspend(iid, actor="admin")
    with pytest.raises(InstanceStateError):
        await engine.approve(task, actor="boss")
    with pytest.raises(InstanceStateError):
        await engine.suspend(iid, actor="admin")
    await engine.resume(iid, actor="admin")
    await engine.approve(task, actor="boss")
    assert (await instance(db, iid))["status"] == "approved"
    with pytest.raises(InstanceStateError):
        await engine.cancel(iid, actor="admin")


async def test_task_without_active_token_is_refused_E4(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await _simple(engine)
    iid = await engine.start("p", form={"amount": 5}, initiator="carol")
    task = await pending_task(db, iid, "mgr")
    async with db.begin() as conn:  # corrupt: the token vanished (what O-12 detects)
        await conn.execute(
            update(workflow_tokens)
            .where(workflow_tokens.c.instance_id == iid)
            .values(state="consumed")
        )
    with pytest.raises(TaskWithoutToken):
        await engine.approve(task, actor="boss")


async def test_transfer_and_comment_E11(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await _simple(engine)
    iid = await engine.start("p", form={"amount": 5}, initiator="carol")
    task = await pending_task(db, iid, "mgr")
    async with db.begin() as conn:  # a transfer names an existing user of the tenant
        await create_user(conn, "deputy", now=clock.now())
    await engine.transfer(task, "deputy", actor="boss", comment="on leave")
    await engine.comment(iid, "please hurry", actor="carol")
    assert (await tasks(db, iid, id=task))[0]["assignee"] == "deputy"
    events = [e["event"] for e in await trace_events(db, iid)]
    assert "task_transferred" in events and "comment_added" in events


def _parallel() -> dict:
    nodes = [
        START,
        {"key": "fork", "type": "parallel"},
        approval("a", "ann"),
        approval("b", "ben"),
        {"key": "join", "type": "parallel"},
        approval("after", "zoe"),
        END,
    ]
    return definition(
        "par",
        nodes,
        [
            ("start", "fork"),
            ("fork", "a"),
            ("fork", "b"),
            ("a", "join"),
            ("b", "join"),
            ("join", "after"),
            ("after", "end"),
        ],
    )


async def test_join_fires_once_when_two_workers_finish_both_branches_at_once_L13(
    db: Database, db_url: str, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(_parallel(), actor="a")
    for _ in range(5):
        iid = await engine.start("par", form={}, initiator="u")
        a, b = await pending_task(db, iid, "a"), await pending_task(db, iid, "b")
        second_db = Database(db_url)
        try:
            other = default_engine(second_db, clock)
            await asyncio.gather(engine.approve(a, actor="ann"), other.approve(b, actor="ben"))
        finally:
            await second_db.dispose()
        assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["after"]
        joined = [e for e in await trace_events(db, iid) if e["event"] == "token_joined"]
        assert len(joined) == 1
        assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["after"]
