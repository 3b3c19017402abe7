"""The node, token and diagram read models (SPEC O-10), both backends, on
instances the engine builds: system waits are ``waiting`` (delay,
subprocess), a position removed by a force jump is ``skipped``, visits count
re-entries, and an open join inside a nested fork names the arrived and the
awaited branch by node key."""

from __future__ import annotations

from typing import Any

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ops.diagnostics.instance import instance_diagnostics
from tests.integration.engine_helpers import END, START, approval, definition, pending_task
from tests.runtime_support import default_engine

WAITS = definition(
    "waits",
    [
        START,
        {"key": "fork", "type": "parallel"},
        {"key": "nap", "type": "delay", "duration": "PT1H"},
        {"key": "sub", "type": "subprocess", "definitionKey": "kid"},
        {"key": "join", "type": "parallel"},
        approval("a", "amy"),
        END,
    ],
    [
        ("start", "fork"),
        ("fork", "nap"),
        ("fork", "sub"),
        ("nap", "join"),
        ("sub", "join"),
        ("join", "a"),
        ("a", "end"),
    ],
)
KID = definition("kid", [START, approval("k", "kim"), END], [("start", "k"), ("k", "end")])
NESTED = definition(
    "nested",
    [
        START,
        {"key": "outer", "type": "parallel"},
        {"key": "inner", "type": "parallel"},
        approval("x", "xia"),
        approval("y", "yan"),
        {"key": "inner_join", "type": "parallel"},
        approval("z", "zoe"),
        {"key": "outer_join", "type": "parallel"},
        END,
    ],
    [
        ("start", "outer"),
        ("outer", "inner"),
        ("outer", "z"),
        ("inner", "x"),
        ("inner", "y"),
        ("x", "inner_join"),
        ("y", "inner_join"),
        ("inner_join", "outer_join"),
        ("z", "outer_join"),
        ("outer_join", "end"),
    ],
)


async def _doc(db: Database, clock: ManualClock, iid: int) -> dict[str, Any]:
    async with db.read() as conn:
        return await instance_diagnostics(conn, iid, tenants=None, now=clock.now())


def _states(doc: dict[str, Any]) -> dict[str, str]:
    return {n["key"]: n["state"] for n in doc["nodes"]}


async def test_system_waits_skips_and_visits(db: Database, clock: ManualClock) -> None:
    engine = default_engine(db, clock)
    await engine.deploy(KID, actor="dev")
    await engine.deploy(WAITS, actor="dev")
    iid = await engine.start("waits", form={}, initiator="ann")
    doc = await _doc(db, clock, iid)
    assert _states(doc) == {
        "start": "done",
        "fork": "done",
        "nap": "waiting",
        "sub": "waiting",
        "join": "not_reached",
        "a": "not_reached",
        "end": "not_reached",
    }
    assert {j["joinNode"] for j in doc["tokens"]["joins"]} == {"join"}
    (join,) = doc["tokens"]["joins"]
    assert join["arrived"] == []
    assert sorted(w["branch"] for w in join["awaited"]) == ["nap", "sub"]
    await engine.force_jump(iid, target="a", reason="skip the waits", actor="ops")
    doc = await _doc(db, clock, iid)
    states = _states(doc)
    assert states["nap"] == "skipped" and states["sub"] == "skipped" and states["a"] == "active"
    assert doc["tokens"]["joins"] == []
    await engine.force_jump(iid, target="a", reason="again", actor="ops")
    doc = await _doc(db, clock, iid)
    a = next(n for n in doc["nodes"] if n["key"] == "a")
    assert a["visits"] == 2 and a["state"] == "active" and len(a["openTaskIds"]) == 1
    edges = {(e["from"], e["to"]): e["taken"] for e in doc["diagram"]["edges"]}
    assert edges[("fork", "nap")] and edges[("fork", "sub")] and not edges[("join", "a")]


async def test_nested_fork_join_branches(db: Database, clock: ManualClock) -> None:
    engine = default_engine(db, clock)
    await engine.deploy(NESTED, actor="dev")
    iid = await engine.start("nested", form={}, initiator="ann")
    await engine.approve(await pending_task(db, iid, "z"), actor="zoe")
    await engine.approve(await pending_task(db, iid, "x"), actor="xia")
    doc = await _doc(db, clock, iid)
    joins = {j["joinNode"]: j for j in doc["tokens"]["joins"]}
    assert set(joins) == {"inner_join", "outer_join"}
    inner, outer = joins["inner_join"], joins["outer_join"]
    assert [a["branch"] for a in inner["arrived"]] == ["x"]
    assert [(w["branch"], w["atNodes"]) for w in inner["awaited"]] == [("y", ["y"])]
    assert [a["branch"] for a in outer["arrived"]] == ["z"]
    # the inner fork's branch is still the outer fork's "inner" branch
    assert [(w["branch"], w["atNodes"]) for w in outer["awaited"]] == [
        ("inner", ["inner_join", "y"])
    ]
    assert _states(doc)["inner_join"] == "waiting" and _states(doc)["y"] == "active"
