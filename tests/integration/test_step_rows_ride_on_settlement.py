"""A job's step writes its buffered rows with its settlement (SPEC L-14,
E-8, E-10; issue 15 item 2: one round trip less per job step): on
PostgreSQL the token moves, outbox, form writes and trace rows ride as CTEs
on the statement that settles the job and puts its receipt, so they commit
exactly with it; on SQLite they are written just before the commit as
before. They ride only when the job's handler hands them over
(``ctx.step(…, rides=take_rider)``; issue 28 item 3: no statement looks
into the transaction's buffers by itself). Both backends."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.clock import ManualClock
from flowledger.db.database import Database, Rider, ride_in_front
from flowledger.engine.job_types import engine_job_type
from flowledger.engine.write_buffer import take_rider
from flowledger.ledger.claim import jobs_claim
from flowledger.states import Pool
from flowledger.worker.context import JobContext
from flowledger.worker.executor import execute
from flowledger.worker.registry import define_handler
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


async def _one_wake(db: Database, clock: ManualClock, key: str) -> tuple[Any, Any]:
    """An instance waiting in two delays, and one of its claimed wake jobs."""
    engine = new_engine(db, clock)
    await engine.deploy(parallel_delays(key), actor="admin")
    iid = await engine.start(key, form={}, initiator="u")
    await engine.approve(await pending_task(db, iid, "mgr"), actor="al")
    claimed = await jobs_claim(db, pool=Pool.LEDGER, limit=1, node_id="n", now=clock.now())
    return engine, claimed[0]


@pytest.mark.parametrize("handed", [True, False], ids=["handed", "kept"])
async def test_a_steps_rows_ride_only_when_its_handler_hands_them_over_L14(
    db: Database, clock: ManualClock, handed: bool
) -> None:
    engine, job = await _one_wake(db, clock, f"ride_{handed}")

    async def handler(ctx: JobContext) -> Any:
        async def run(conn: AsyncConnection) -> dict[str, Any]:
            step = await engine.open_step(conn, job.instance_id, actor="t", job_id=job.id)
            await step.trace("probe_written")
            return {"done": True}

        rides = take_rider if handed else None
        return await ctx.step("probe", run, completes=lambda result: result, rides=rides)

    with statement_watch.watched(db) as seen:
        probe = define_handler(engine_job_type("delay_wake"), handler)
        assert await execute(JobContext(job, db, clock), probe, abort_grace_s=1.0) is None
    [trace_write] = [s for s in seen if "INSERT INTO workflow_trace" in s]
    rode = "UPDATE workflow_jobs AS j SET status = 'succeeded'" in trace_write
    assert rode == (handed and not db.is_sqlite)  # SQLite: nothing ever rides
    assert [j["status"] for j in await jobs(db, job.instance_id, type="delay_wake")].count(
        "succeeded"
    ) == 1
    assert "probe_written" in [r["event"] for r in await trace_events(db, job.instance_id)]


def test_ride_in_front_puts_the_rider_before_the_statements_own_ctes() -> None:
    statement = "WITH answer AS (SELECT %(v)s::int AS v) SELECT v FROM answer"
    rider: Rider = ("rider AS (INSERT INTO rode VALUES (%(r)s))", {"r": 7})
    sql, params = ride_in_front(statement, {"v": 1}, rider)
    assert sql == (
        "WITH rider AS (INSERT INTO rode VALUES (%(r)s)), "
        "answer AS (SELECT %(v)s::int AS v) SELECT v FROM answer"
    )
    assert params == {"v": 1, "r": 7}
    with pytest.raises(ValueError, match="clash"):
        ride_in_front(statement, {"v": 1}, ("again AS (SELECT 1)", {"v": 2}))
    with pytest.raises(ValueError, match="WITH list"):
        ride_in_front("SELECT 1", {}, rider)
