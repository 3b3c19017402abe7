"""A job's step writes its buffered rows with its settlement (SPEC L-14,
E-8, E-10; issue 15 item 2: one round trip less per job step): on
PostgreSQL the token moves, outbox, form writes and trace rows are CTEs of
the one statement that settles the job and puts its receipt — composed by
the engine store from the ledger's exported parts
(``engine/store/step_statements.py``) — so they commit exactly with it; on
SQLite the store writes them, then the ledger settles. Only when the job's
handler hands its settlement to the store (``ctx.step(…,
settlement=JobStepSettlement(store))``; issue 28 item 3: no statement looks
into the transaction's buffers by itself, and the ledger runs no caller's
SQL). Both backends."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs
from flowledger.engine.job_types import engine_job_type
from flowledger.engine.step import JobStepSettlement
from flowledger.engine.store import step_statements
from flowledger.errors import LeaseLostError
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
from tests.ledger_access import ledger_of
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
        claimed = await ledger_of(db).jobs_claim(
            db, pool=Pool.LEDGER, limit=10, node_id="n", now=clock.now()
        )
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
    claimed = await ledger_of(db).jobs_claim(
        db, pool=Pool.LEDGER, limit=1, node_id="n", now=clock.now()
    )
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

        settlement = JobStepSettlement(engine.store) if handed else None
        return await ctx.step("probe", run, completes=lambda result: result, settlement=settlement)

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


async def test_a_stale_fence_commits_none_of_the_steps_rows_L13_L14(
    db: Database, clock: ManualClock
) -> None:
    """The store's composed statement writes the step's rows even when the
    settlement inside it finds the fence gone: the step must then roll back
    whole (LeaseLostError), leaving no row of it and the job as it is."""
    engine, job = await _one_wake(db, clock, "ride_stale")

    async def handler(ctx: JobContext) -> Any:
        async def run(conn: AsyncConnection) -> dict[str, Any]:
            step = await engine.open_step(conn, job.instance_id, actor="t", job_id=job.id)
            await step.trace("probe_written")
            # another executor takes the job over inside the fence's window
            await conn.execute(
                update(workflow_jobs)
                .where(workflow_jobs.c.id == job.id)
                .values(lease_token="someone-else")
            )
            return {"done": True}

        return await ctx.step(
            "probe",
            run,
            completes=lambda result: result,
            settlement=JobStepSettlement(engine.store),
        )

    with pytest.raises(LeaseLostError):
        await handler(JobContext(job, db, clock))
    assert "probe_written" not in [r["event"] for r in await trace_events(db, job.instance_id)]
    [wake] = [j for j in await jobs(db, job.instance_id, type="delay_wake") if j["id"] == job.id]
    assert wake["status"] == "running" and wake["lease_token"] != "someone-else"


def test_the_composed_statements_put_the_ledgers_parts_whole_around_the_steps_rows() -> None:
    """The settlement's CTEs follow the step's rows and answer with the
    settled id; the insert's CTEs come first and answer (ord, id): the
    ledger's parts appear whole, never edited."""
    from flowledger.ledger.driver import postgres_parts as parts

    settle = step_statements.rows_then_settlement_sql("mine AS (SELECT 1)")
    assert (
        settle == f"WITH mine AS (SELECT 1), {parts.SETTLEMENT_CTES}\n{parts.SETTLEMENT_SELECT}\n"
    )
    insert = step_statements.jobs_then_rows_sql(
        "input AS (SELECT 1)", "SELECT 2", "mine AS (SELECT 3)"
    )
    assert insert == "WITH input AS (SELECT 1), mine AS (SELECT 3)\nSELECT 2\n"
    with pytest.raises(ValueError, match="also the ledger's"):  # a name both bind
        step_statements.rows_then_settlement_sql("mine AS (SELECT %(gen)s)")
