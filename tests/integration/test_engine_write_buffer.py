"""The engine's write buffer (issue 15 item 2; SPEC E-4, E-8, E-10, L-13): a
step writes its trace and outbox rows once per table (one statement on
PostgreSQL) just before its commit, in the order they were made, with the
token moves; a step outside ``Database.begin`` still writes at once."""

from __future__ import annotations

from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox, workflow_instances, workflow_trace
from tests import statement_watch
from tests.integration.engine_helpers import (
    forked_approvals,
    new_engine,
    pending_task,
    tokens,
    trace_events,
)

FORKED = forked_approvals("forked")


class Statements:
    """The SQL statements run on ``db`` while it is watched."""

    def __init__(self, db: Database) -> None:
        self.seen: list[str] = []
        self.close = statement_watch.listen(db, self._record)

    def _record(self, statement: str) -> None:
        self.seen.append(" ".join(statement.split()))

    def writing(self, table: str) -> list[str]:
        return [s for s in self.seen if f"INSERT INTO {table} " in s]


async def _start_watched(db: Database, clock: ManualClock) -> tuple[int, Statements]:
    """Deploy FORKED and start it, watching the start's statements."""
    engine = new_engine(db, clock)
    await engine.deploy(FORKED, actor="a")
    watched = Statements(db)
    try:
        iid = await engine.start("forked", form={}, initiator="u")
    finally:
        watched.close()
    return iid, watched


async def test_a_step_writes_its_trace_and_outbox_once_in_order(
    db: Database, clock: ManualClock
) -> None:
    iid, watched = await _start_watched(db, clock)
    trace_writes = watched.writing("workflow_trace")
    outbox_writes = watched.writing("workflow_event_outbox")
    if db.is_sqlite:  # one executemany per table
        assert len(trace_writes) == 1 and len(outbox_writes) == 1
    else:  # one statement writes moves, outbox and trace
        assert len(trace_writes) == 1 and trace_writes == outbox_writes
    events = [(r["event"], r["node_key"]) for r in await trace_events(db, iid)]
    assert events[:4] == [
        ("instance_started", None),
        ("event_emitted", None),
        ("node_entered", "start"),
        ("node_left", "start"),
    ]
    assert ("token_forked", "fork") in events
    assert [e for e, _ in events].count("task_created") == 2
    async with db.read() as conn:
        outbox = (
            await conn.execute(
                select(workflow_event_outbox.c.event_type)
                .where(workflow_event_outbox.c.instance_id == iid)
                .order_by(workflow_event_outbox.c.id)
            )
        ).scalars()
        assert list(outbox) == ["instance.started", "task.created", "task.created"]
    # the buffered moves were written: the live tokens stand at the two tasks
    assert sorted(t["node_key"] for t in await tokens(db, iid, state="active")) == ["a", "b"]


async def test_a_join_parks_and_merges_with_buffered_moves(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(FORKED, actor="a")
    iid = await engine.start("forked", form={}, initiator="u")
    await engine.approve(await pending_task(db, iid, "a"), actor="ann")
    parked = await tokens(db, iid, state="parked")
    assert [t["node_key"] for t in parked] == ["join"]
    await engine.approve(await pending_task(db, iid, "b"), actor="bob")
    assert await tokens(db, iid, state="parked") == []
    assert await tokens(db, iid, state="active") == []
    consumed = await tokens(db, iid, state="consumed")
    assert sorted(t["node_key"] for t in consumed) == ["end", "fork", "join", "join"]
    events = [r["event"] for r in await trace_events(db, iid)]
    assert events.count("token_parked") == 2 and events[-1] == "event_emitted"
    assert "token_joined" in events and "instance_finished" in events


async def test_a_step_outside_database_begin_writes_at_once(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(FORKED, actor="a")
    iid = await engine.start("forked", form={}, initiator="u")
    async with db.engine.begin() as conn, engine.step(conn, iid, "ops") as step:
        await step.trace("probe", detail={"n": 1})
        found = (
            await conn.execute(
                select(workflow_trace.c.detail).where(
                    workflow_trace.c.instance_id == iid, workflow_trace.c.event == "probe"
                )
            )
        ).scalar_one()
        assert found == {"n": 1}


async def test_a_start_inserts_the_instance_and_its_first_token_together(
    db: Database, clock: ManualClock
) -> None:
    # issue 15 item 2 (SPEC E-2): on PostgreSQL one statement inserts the
    # instance, its snapshot copied from the version, and the start token
    iid, watched = await _start_watched(db, clock)
    instance_writes = watched.writing("workflow_instances")
    token_writes = watched.writing("workflow_tokens")
    assert len(instance_writes) == 1
    if db.is_sqlite:  # the start token's own insert, then the branch tokens' (one per row)
        assert instance_writes[0] not in token_writes and len(token_writes) == 3
    else:  # the start token rides on the instance's insert; the branches: one insert
        assert instance_writes[0] in token_writes and len(token_writes) == 2
    everything = await tokens(db, iid)
    assert sorted((t["node_key"], t["state"]) for t in everything) == [
        ("a", "active"),
        ("b", "active"),
        ("fork", "consumed"),
    ]
    async with db.read() as conn:
        snapshot = (
            await conn.execute(
                select(workflow_instances.c.snapshot, workflow_instances.c.initiator).where(
                    workflow_instances.c.id == iid
                )
            )
        ).one()
    assert snapshot.initiator == "u" and snapshot.snapshot["key"] == "forked"
