"""Node types and gateways (SPEC E-3, E-4, E-5), on both backends."""

from __future__ import annotations

from flowledger.clock import ManualClock
from flowledger.db.database import Database
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

AMOUNT = [{"key": "amount", "type": "number", "required": True}]


async def test_approval_any_approves_and_ends_E3(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(
        definition(
            "p", [START, approval("mgr", "alice", "bob"), END], [("start", "mgr"), ("mgr", "end")]
        ),
        actor="admin",
    )
    iid = await engine.start("p", form={}, initiator="carol")
    open_ = await tasks(db, iid, status="pending")
    assert [t["assignee"] for t in open_] == ["alice", "bob"]
    await engine.approve(open_[0]["id"], actor="alice", comment="ok")
    assert (await instance(db, iid))["status"] == "approved"
    statuses = {t["assignee"]: (t["status"], t["action"]) for t in await tasks(db, iid)}
    assert statuses == {"alice": ("completed", "approve"), "bob": ("canceled", None)}
    assert await tokens(db, iid, "active") == []


async def test_approval_all_waits_for_every_assignee_E3(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(
        definition(
            "p",
            [START, approval("mgr", "alice", "bob", mode="all"), END],
            [("start", "mgr"), ("mgr", "end")],
        ),
        actor="admin",
    )
    iid = await engine.start("p", form={}, initiator="carol")
    await engine.approve(await pending_task(db, iid, "mgr", "alice"), actor="alice")
    assert (await instance(db, iid))["status"] == "running"
    await engine.approve(await pending_task(db, iid, "mgr", "bob"), actor="bob")
    assert (await instance(db, iid))["status"] == "approved"


async def test_reject_rejects_the_instance_E6(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(
        definition("p", [START, approval("mgr", "alice"), END], [("start", "mgr"), ("mgr", "end")]),
        actor="admin",
    )
    iid = await engine.start("p", form={}, initiator="carol")
    await engine.reject(await pending_task(db, iid, "mgr"), actor="alice", comment="no")
    row = await instance(db, iid)
    assert (row["status"], row["finished_at"] is not None) == ("rejected", True)


async def test_handle_and_cc_E3_E5(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    nodes = [
        START,
        {"key": "copy", "type": "cc", "assignees": {"users": ["dave", "erin"]}},
        {"key": "work", "type": "handle", "assignees": {"users": ["frank"]}},
        END,
    ]
    await engine.deploy(
        definition("p", nodes, [("start", "copy"), ("copy", "work"), ("work", "end")]),
        actor="admin",
    )
    iid = await engine.start("p", form={}, initiator="carol")
    cc = await tasks(db, iid, node_key="copy")
    assert [(t["assignee"], t["status"]) for t in cc] == [("dave", "cc"), ("erin", "cc")]
    await engine.handle(await pending_task(db, iid, "work"), actor="frank")
    assert (await instance(db, iid))["status"] == "approved"


def _exclusive(default: bool) -> dict:
    edges: list = [
        ("start", "gw"),
        {"from": "gw", "to": "big", "condition": "form.amount > 1000"},
        ("big", "end"),
        ("small", "end"),
    ]
    edges.append(
        {"from": "gw", "to": "small", "condition": "form.amount < 10", "default": False}
        if not default
        else {"from": "gw", "to": "small", "default": True}
    )
    nodes = [
        START,
        {"key": "gw", "type": "exclusive"},
        approval("big", "cfo"),
        approval("small", "clerk"),
        END,
    ]
    return definition("x", nodes, edges, AMOUNT)


async def test_exclusive_first_match_then_default_E3(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(_exclusive(default=True), actor="admin")
    big = await engine.start("x", form={"amount": 5000}, initiator="u")
    other = await engine.start("x", form={"amount": 500}, initiator="u")
    assert [t["node_key"] for t in await tasks(db, big, status="pending")] == ["big"]
    assert [t["node_key"] for t in await tasks(db, other, status="pending")] == ["small"]


async def test_exclusive_without_match_fails_loudly_E3_E8(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(_exclusive(default=False), actor="admin")
    iid = await engine.start("x", form={"amount": 500}, initiator="u")
    row = await instance(db, iid)
    assert row["status"] == "running"  # never silently ended
    assert "no condition" in row["error"]
    failed = [e for e in await trace_events(db, iid) if e["event"] == "node_failed"]
    assert [(e["node_key"], e["detail"]["code"]) for e in failed] == [
        ("gw", "no_matching_condition")
    ]
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["gw"]


async def test_inclusive_join_waits_only_for_taken_branches_E4(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    nodes = [
        START,
        {"key": "fork", "type": "inclusive"},
        approval("a", "ann"),
        approval("b", "ben"),
        approval("c", "cid"),
        {"key": "join", "type": "inclusive"},
        approval("after", "zoe"),
        END,
    ]
    edges = [
        ("start", "fork"),
        {"from": "fork", "to": "a", "condition": "form.amount > 0"},
        {"from": "fork", "to": "b", "condition": "form.amount > 100"},
        {"from": "fork", "to": "c", "condition": "form.amount > 10000"},
        ("a", "join"),
        ("b", "join"),
        ("c", "join"),
        ("join", "after"),
        ("after", "end"),
    ]
    await engine.deploy(definition("inc", nodes, edges, AMOUNT), actor="admin")
    iid = await engine.start("inc", form={"amount": 500}, initiator="u")
    assert sorted(t["node_key"] for t in await tasks(db, iid, status="pending")) == ["a", "b"]
    await engine.approve(await pending_task(db, iid, "a"), actor="ann")
    assert [t["node_key"] for t in await tokens(db, iid, "parked")] == ["join"]
    assert await tasks(db, iid, node_key="after") == []
    await engine.approve(await pending_task(db, iid, "b"), actor="ben")
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["after"]
    await engine.approve(await pending_task(db, iid, "after"), actor="zoe")
    assert (await instance(db, iid))["status"] == "approved"


async def test_parallel_inside_parallel_E4(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    nodes = [
        START,
        {"key": "outer", "type": "parallel"},
        {"key": "inner", "type": "parallel"},
        approval("x1", "u1"),
        approval("x2", "u2"),
        {"key": "innerJoin", "type": "parallel"},
        approval("y", "u3"),
        {"key": "outerJoin", "type": "parallel"},
        END,
    ]
    edges = [
        ("start", "outer"),
        ("outer", "inner"),
        ("outer", "y"),
        ("inner", "x1"),
        ("inner", "x2"),
        ("x1", "innerJoin"),
        ("x2", "innerJoin"),
        ("innerJoin", "outerJoin"),
        ("y", "outerJoin"),
        ("outerJoin", "end"),
    ]
    await engine.deploy(definition("pp", nodes, edges), actor="admin")
    iid = await engine.start("pp", form={}, initiator="u")
    assert sorted(t["node_key"] for t in await tasks(db, iid, status="pending")) == [
        "x1",
        "x2",
        "y",
    ]
    await engine.approve(await pending_task(db, iid, "y"), actor="u3")
    await engine.approve(await pending_task(db, iid, "x1"), actor="u1")
    assert (await instance(db, iid))["status"] == "running"
    assert sorted(t["node_key"] for t in await tokens(db, iid, "parked")) == [
        "innerJoin",
        "outerJoin",
    ]
    await engine.approve(await pending_task(db, iid, "x2"), actor="u2")
    assert (await instance(db, iid))["status"] == "approved"
    assert await tokens(db, iid, "parked") == []


async def test_a_trigger_node_waits_for_its_job_E3_E5_X1(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    nodes = [
        START,
        {"key": "erp", "type": "trigger", "call": {"kind": "http", "url": "https://erp.example/x"}},
        END,
    ]
    await engine.deploy(definition("t", nodes, [("start", "erp"), ("erp", "end")]), actor="a")
    iid = await engine.start("t", form={}, initiator="u")
    [task] = await tasks(db, iid)
    assert (task["node_key"], task["kind"], task["status"]) == ("erp", "trigger", "waiting")
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["erp"]
    assert "node_failed" not in [e["event"] for e in await trace_events(db, iid)]
    assert (await instance(db, iid))["status"] == "running"
