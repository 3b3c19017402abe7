"""Tokens at a gateway (SPEC E-4; issue 15 item 2: fewer round trips per
step), on both backends: a fork writes its frame, consumes the forking token
where its buffered move took it and creates the branches with the frame on
top of their stacks — one statement on PostgreSQL; a join that waits parks
the arriving token with the step's buffered moves (no statement of its own);
a join that fires consumes the arrivals and creates the merged token — one
statement on PostgreSQL; and branches that meet at the join in the step that
forked them still see each other's parks."""

from __future__ import annotations

from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_forks
from tests import statement_watch
from tests.integration.engine_helpers import (
    END,
    START,
    definition,
    forked_approvals,
    instance,
    new_engine,
    pending_task,
    tokens,
    trace_events,
)

FORKED = forked_approvals("gateway_tokens")

# both branches pass straight through to the join, in the step that forks them
MEETING = definition(
    "gateway_meeting",
    [
        START,
        {"key": "fork", "type": "parallel"},
        {"key": "x", "type": "exclusive"},
        {"key": "y", "type": "exclusive"},
        {"key": "join", "type": "parallel"},
        END,
    ],
    [
        ("start", "fork"),
        ("fork", "x"),
        ("fork", "y"),
        {"from": "x", "to": "join", "default": True},
        {"from": "y", "to": "join", "default": True},
        ("join", "end"),
    ],
)


def _writing_tokens(seen: list[str]) -> list[str]:
    return [s for s in seen if "UPDATE workflow_tokens" in s or "INSERT INTO workflow_tokens" in s]


async def test_a_fork_writes_frame_consumption_and_branches_together_E4(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(FORKED, actor="a")
    with statement_watch.watched(db) as seen:
        iid = await engine.start("gateway_tokens", form={}, initiator="u")
    forks = [s for s in seen if "INSERT INTO workflow_forks" in s]
    assert len(forks) == 1
    if not db.is_sqlite:  # the frame, the consumed token and the branches: one statement
        assert "UPDATE workflow_tokens" in forks[0] and "INSERT INTO workflow_tokens" in forks[0]
    async with db.read() as conn:
        frame = (
            (await conn.execute(select(workflow_forks).where(workflow_forks.c.instance_id == iid)))
            .mappings()
            .one()
        )
    assert (frame["node_key"], frame["gateway"], frame["expected"]) == ("fork", "parallel", 2)
    rows = await tokens(db, iid)
    # the start token, consumed where its move took it; the branches in edge order
    assert [(t["node_key"], t["state"], t["fork_stack"]) for t in rows] == [
        ("fork", "consumed", []),
        ("a", "active", [frame["id"]]),
        ("b", "active", [frame["id"]]),
    ]
    assert rows[0]["consumed_at"] == clock.now()
    forked = [r for r in await trace_events(db, iid) if r["event"] == "token_forked"]
    assert forked[0]["detail"]["branches"] == [rows[1]["id"], rows[2]["id"]]


async def test_a_waiting_join_parks_with_the_moves_and_a_firing_join_is_one_write_E4(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(FORKED, actor="a")
    iid = await engine.start("gateway_tokens", form={}, initiator="u")
    with statement_watch.watched(db) as seen:
        await engine.approve(await pending_task(db, iid, "a"), actor="ann")
    if not db.is_sqlite:  # the park rides on the step's one write of moves, outbox and trace
        writes = _writing_tokens(seen)
        assert len(writes) == 1 and "INSERT INTO workflow_trace" in writes[0], writes
    parked = await tokens(db, iid, state="parked")
    assert [(t["node_key"], t["fork_stack"] != []) for t in parked] == [("join", True)]
    with statement_watch.watched(db) as seen:
        await engine.approve(await pending_task(db, iid, "b"), actor="bob")
    merges = [s for s in seen if "INSERT INTO workflow_tokens" in s]
    assert len(merges) == 1
    if not db.is_sqlite:  # the arrivals consumed and the merged token created together
        assert "UPDATE workflow_tokens" in merges[0]
    rows = await tokens(db, iid)
    joined = [t for t in rows if t["node_key"] == "join"]
    merged = rows[-1]  # created at the join, then consumed at the end
    assert [t["state"] for t in joined] == ["consumed", "consumed"]
    assert (merged["node_key"], merged["state"], merged["fork_stack"]) == ("end", "consumed", [])
    assert all(t["consumed_at"] == clock.now() for t in [*joined, merged])
    events = await trace_events(db, iid)
    joined_event = next(r for r in events if r["event"] == "token_joined")
    assert joined_event["token_id"] == merged["id"]
    assert joined_event["detail"]["joined"] == [t["id"] for t in joined[:2]]
    assert (await instance(db, iid))["status"] == "approved"


async def test_branches_meeting_in_the_forking_step_see_each_others_park_E4(
    db: Database, clock: ManualClock
) -> None:
    # the first arrival's park is still buffered when the second arrives:
    # the join's read writes it first, so the join fires and the instance ends
    engine = new_engine(db, clock)
    await engine.deploy(MEETING, actor="a")
    iid = await engine.start("gateway_meeting", form={}, initiator="u")
    assert (await instance(db, iid))["status"] == "approved"
    assert await tokens(db, iid, state="parked") == []
    assert await tokens(db, iid, state="active") == []
    events = [(r["event"], r["detail"]) for r in await trace_events(db, iid)]
    parks = [d for e, d in events if e == "token_parked"]
    assert parks == [{"arrived": 1, "expected": 2}, {"arrived": 2, "expected": 2}]
    assert [e for e, _ in events].count("token_joined") == 1
