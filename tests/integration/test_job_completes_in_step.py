"""An engine job's step settles its own attempt (SPEC L-14, L-22): the job is
succeeded exactly when its step commits, so when a sibling job's step ends
the instance, the cleanup of L-22 does not find the first job still running
and cancel it while its settlement waits in the worker's queue (before, a
parallel pair of delays ended with about half its delay_wake jobs and
attempts "canceled" although their work had committed)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_tasks
from flowledger.db.schema import workflow_job_executions
from flowledger.engine import Engine
from flowledger.states import Pool
from flowledger.worker.context import AbortReason, JobContext
from flowledger.worker.executor import execute
from tests.integration.engine_helpers import (
    END,
    START,
    definition,
    instance,
    jobs,
    new_engine,
    parallel_delays,
    pending_task,
    tasks,
)
from tests.ledger_access import ledger_of
from tests.runtime_support import runtime_for


async def _attempts(db: Database, job_id: int) -> list[dict[str, Any]]:
    async with db.read() as conn:
        rows = await conn.execute(
            select(workflow_job_executions).where(workflow_job_executions.c.job_id == job_id)
        )
        return [dict(r._mapping) for r in rows]


async def _at_the_fork(engine: Engine, db: Database) -> int:
    """An instance approved past its parallel fork: two delay jobs pending."""
    await engine.deploy(parallel_delays("pd"), actor="admin")
    iid = await engine.start("pd", form={}, initiator="u")
    await engine.approve(await pending_task(db, iid, "mgr"), actor="al")
    return iid


async def test_a_sibling_ending_the_instance_does_not_cancel_a_finished_job_L22_L14(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    iid = await _at_the_fork(engine, db)
    runtime = runtime_for(db, clock)
    try:
        # both delay jobs claimed at once, as a worker's free slots take them
        claimed = await ledger_of(db).jobs_claim(
            db, pool=Pool.LEDGER, limit=10, node_id="node-a", now=clock.now()
        )
        assert sorted(j.type for j in claimed) == ["delay_wake", "delay_wake"]
        clock.advance(seconds=1)
        outcomes = []
        for job in claimed:  # the first wakes its branch, the second ends the instance
            ctx = JobContext(job, db, clock)
            outcomes.append(await execute(ctx, runtime.handlers.get(job.type), abort_grace_s=1.0))
        # what the worker's settlement queue writes after both steps committed
        await ledger_of(db).jobs_settle(
            db,
            [(j, o) for j, o in zip(claimed, outcomes, strict=True) if o is not None],
            now=clock.now(),
        )
    finally:
        await runtime.aclose()
    assert (await instance(db, iid))["status"] == "approved"
    assert sorted(t["status"] for t in await tasks(db, iid, node_key="left")) == ["completed"]
    for row in await jobs(db, iid, type="delay_wake"):
        assert (row["status"], row["lease_token"], row["last_error"]) == ("succeeded", None, None)
        [attempt] = await _attempts(db, row["id"])
        assert attempt["status"] == "succeeded"
        assert attempt["duration_ms"] == 1000
        assert attempt["finished_at"] is not None
    assert outcomes == [None, None]  # each settled in its step: nothing left to queue


async def test_a_pending_sibling_is_still_canceled_when_the_instance_ends_L22(
    db: Database, clock: ManualClock
) -> None:
    # the cleanup itself is unchanged: a job that has not run is canceled
    engine = new_engine(db, clock)
    iid = await _at_the_fork(engine, db)
    await engine.cancel(iid, actor="admin", reason="stop")
    assert sorted(j["status"] for j in await jobs(db, iid, type="delay_wake")) == [
        "canceled",
        "canceled",
    ]


async def test_a_step_that_skips_settles_its_attempt_as_skipped_L4(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    nodes = [START, {"key": "wait", "type": "delay", "duration": "PT0S"}, END]
    await engine.deploy(definition("sk", nodes, [("start", "wait"), ("wait", "end")]), actor="a")
    iid = await engine.start("sk", form={}, initiator="u")
    [job_row] = await jobs(db, iid, type="delay_wake")
    runtime = runtime_for(db, clock)
    try:
        [job] = await ledger_of(db).jobs_claim(
            db, pool=Pool.LEDGER, limit=1, node_id="n", now=clock.now()
        )
        [task] = await tasks(db, iid, node_key="wait")
        async with db.begin() as conn:  # the task no longer waits (as after a force jump)
            await conn.execute(
                workflow_tasks.update()
                .where(workflow_tasks.c.id == task["id"])
                .values(status="canceled")
            )
        ctx = JobContext(job, db, clock)
        assert await execute(ctx, runtime.handlers.get(job.type), abort_grace_s=1.0) is None
        assert ctx.settled
    finally:
        await runtime.aclose()
    [row] = await jobs(db, iid, type="delay_wake")
    assert row["id"] == job_row["id"]
    assert row["status"] == "succeeded"
    [attempt] = await _attempts(db, row["id"])
    assert attempt["status"] == "skipped"


async def test_an_attempt_aborted_before_its_step_still_settles_with_it_L14_L11(
    db: Database, clock: ManualClock
) -> None:
    # a shutdown abort fired before the step: the fence still holds, so the
    # step does the work and the attempt is recorded as the success it was,
    # not released to run again
    engine = new_engine(db, clock)
    iid = await _at_the_fork(engine, db)
    runtime = runtime_for(db, clock)
    try:
        job, _other = await ledger_of(db).jobs_claim(
            db, pool=Pool.LEDGER, limit=2, node_id="n", now=clock.now()
        )
        ctx = JobContext(job, db, clock)
        ctx.fire_abort(AbortReason.SHUTDOWN)
        assert await execute(ctx, runtime.handlers.get(job.type), abort_grace_s=1.0) is None
    finally:
        await runtime.aclose()
    [row] = [r for r in await jobs(db, iid, type="delay_wake") if r["id"] == job.id]
    assert (row["status"], row["attempts"]) == ("succeeded", 1)
    [attempt] = await _attempts(db, job.id)
    assert attempt["status"] == "succeeded"
