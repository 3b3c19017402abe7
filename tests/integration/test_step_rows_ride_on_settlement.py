"""A job's step writes its buffered rows with its settlement (SPEC L-14,
E-8, E-10; issue 15 item 2: one round trip less per job step): on
PostgreSQL the token moves, outbox, form writes and trace rows ride as CTEs
on the statement that settles the job and puts its receipt
(``db.database.with_riders``), so they commit exactly with it; on SQLite
they are written just before the commit as before. Both backends."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from flowledger.clock import ManualClock
from flowledger.db.database import Database, Rider, pre_commit, with_riders
from flowledger.ledger.claim import jobs_claim
from flowledger.states import Pool
from flowledger.worker.context import JobContext
from flowledger.worker.executor import execute
from tests import statement_watch
from tests.integration.engine_helpers import (
    instance,
    jobs,
    new_engine,
    parallel_delays,
    pending_task,
    trace_events,
)
from tests.runtime_support import runtime_for

PARALLEL_DELAYS = parallel_delays("ride")


async def test_a_job_steps_rows_commit_with_its_settlement_L14_E8(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(PARALLEL_DELAYS, actor="admin")
    iid = await engine.start("ride", form={}, initiator="u")
    await engine.approve(await pending_task(db, iid, "mgr"), actor="al")
    runtime = runtime_for(db, clock)
    try:
        claimed = await jobs_claim(db, pool=Pool.LEDGER, limit=10, node_id="n", now=clock.now())
        assert sorted(j.type for j in claimed) == ["delay_wake", "delay_wake"]
        with statement_watch.watched(db) as seen:
            for job in claimed:  # the first parks its branch, the second ends the instance
                outcome = await execute(
                    JobContext(job, db, clock), runtime.handlers.get(job.type), abort_grace_s=1.0
                )
                assert outcome is None  # settled in its step
    finally:
        await runtime.aclose()
    trace_writes = [s for s in seen if "INSERT INTO workflow_trace" in s]
    assert len(trace_writes) == 2  # one per step
    if not db.is_sqlite:  # each inside the statement that settles the job
        assert all("UPDATE workflow_jobs AS j SET status = 'succeeded'" in s for s in trace_writes)
    assert (await instance(db, iid))["status"] == "approved"
    assert [j["status"] for j in await jobs(db, iid, type="delay_wake")] == ["succeeded"] * 2
    events = [(r["event"], r["node_key"]) for r in await trace_events(db, iid)]
    tail = events[events.index(("node_left", "left")) :]
    assert ("token_parked", "join") in tail and ("token_joined", "join") in tail
    assert events[-2:] == [("instance_finished", None), ("event_emitted", None)]


class _Buffer:
    """A pre-commit buffer offering one rider (or none)."""

    def __init__(self, rider: Rider | None) -> None:
        self.rider = rider
        self.flushed = False

    async def flush(self) -> None:
        self.flushed = True

    async def take_rider(self) -> Rider | None:
        rider, self.rider = self.rider, None
        return rider


async def test_with_riders_puts_the_riders_in_front_of_the_statement(db: Database) -> None:
    statement = "WITH answer AS (SELECT %(v)s::int AS v) SELECT v FROM answer"
    async with db.begin() as conn:
        registry = pre_commit(conn)
        assert registry is not None
        if db.is_sqlite:  # nothing rides on SQLite: the buffer offers none
            registry["probe"] = _Buffer(None)
            assert await with_riders(conn, statement, {"v": 1}) == (statement, {"v": 1})
            return
        await conn.exec_driver_sql("CREATE TEMP TABLE rode (v int)")
        rider: Rider = ("rider AS (INSERT INTO rode VALUES (%(r)s))", {"r": 7})
        buffer = registry["probe"] = _Buffer(rider)
        sql, params = await with_riders(conn, statement, {"v": 1})
        assert sql.startswith("WITH rider AS (INSERT INTO rode") and params == {"v": 1, "r": 7}
        assert (await conn.exec_driver_sql(sql, params)).scalar_one() == 1
        assert (await conn.execute(text("SELECT v FROM rode"))).scalar_one() == 7
        assert await with_riders(conn, statement, {"v": 1}) == (statement, {"v": 1})  # taken
        buffer.rider = ("again AS (SELECT 1)", {"v": 2})
        with pytest.raises(ValueError, match="clash"):
            await with_riders(conn, statement, {"v": 1})
        buffer.rider = ("again AS (SELECT 1)", {})
        with pytest.raises(ValueError, match="WITH list"):
            await with_riders(conn, "SELECT 1", {})
