"""A job step's first statement (SPEC E-3, L-13, L-14; issue 28: the engine
store's ``job_step_lock``, composed from the ledger's exported fence): the
instance row is locked, then — for a ``delay_wake`` — the delay's task is
finished only while the instance is running, the task still waiting with an
active token and the step has no receipt, then the job is locked fenced and
its receipt read. On PostgreSQL one statement (``locked_instance``,
``finished_task``, the fence's select), on SQLite three in the same order.
Both backends; the lock order under a concurrent holder of the instance row
is PostgreSQL's (SQLite has one writer at a time)."""

from __future__ import annotations

import asyncio

import pytest
from sqlalchemy import select, text, update

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances, workflow_tasks
from flowledger.db.schema import workflow_jobs
from flowledger.engine.store.job_lock import JobStepLocked
from flowledger.errors import LeaseLostError
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.models import ClaimedJob, Fence
from flowledger.states import Pool
from flowledger.worker.context import JobContext
from flowledger.worker.executor import execute
from tests import statement_watch
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    new_engine,
    parallel_delays,
    pending_task,
    tasks,
    tokens,
    trace_events,
)
from tests.ledger_access import ledger_of
from tests.runtime_support import runtime_for

DELAYED = definition(
    "wake_lock",
    [START, {"key": "wait", "type": "delay", "duration": "PT1H"}, approval("mgr", "al"), END],
    [("start", "wait"), ("wait", "mgr"), ("mgr", "end")],
)


async def _run(db: Database, clock: ManualClock, job: ClaimedJob) -> None:
    runtime = runtime_for(db, clock)
    try:
        ctx = JobContext(job, db, clock)
        assert await execute(ctx, runtime.handlers.get(job.type), abort_grace_s=1.0) is None
    finally:
        await runtime.aclose()


async def _delayed(db: Database, clock: ManualClock) -> tuple[int, int, ClaimedJob]:
    """An instance waiting at ``wait`` whose wake is due and claimed."""
    engine = new_engine(db, clock)
    await engine.deploy(DELAYED, actor="admin")
    iid = await engine.start("wake_lock", form={}, initiator="u")
    [wait] = await tasks(db, iid, node_key="wait")
    clock.advance(seconds=3600)
    [job] = await ledger_of(db).jobs_claim(
        db, pool=Pool.LEDGER, limit=10, node_id="n", now=clock.now()
    )
    assert job.type == "delay_wake"
    return iid, int(wait["id"]), job


async def _attempt_status(db: Database, job_id: int) -> str:
    async with db.read() as conn:
        found = await conn.execute(
            text("SELECT status FROM workflow_job_executions WHERE job_id = :j ORDER BY id DESC"),
            {"j": job_id},
        )
        return str(found.scalars().first())


async def test_the_delay_task_is_finished_by_the_wakes_first_lock_E3_L13(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(parallel_delays("wake_both"), actor="admin")
    iid = await engine.start("wake_both", form={}, initiator="u")
    await engine.approve(await pending_task(db, iid, "mgr"), actor="al")
    claimed = await ledger_of(db).jobs_claim(
        db, pool=Pool.LEDGER, limit=10, node_id="n", now=clock.now()
    )
    assert sorted(j.type for j in claimed) == ["delay_wake", "delay_wake"]
    clock.advance(seconds=5)
    with statement_watch.watched(db) as seen:
        for job in claimed:  # the first parks its branch, the second ends the instance
            await _run(db, clock, job)
    task_writes = [s for s in seen if "UPDATE workflow_tasks" in s]
    assert len(task_writes) == 2  # one per wake, and nothing else writes a task
    if db.is_sqlite:  # its own statement, after the instance's and the job's locks
        assert all(s.lstrip().startswith("UPDATE workflow_tasks") for s in task_writes)
    else:  # inside the statement that locks the instance, then the job
        for statement in task_writes:
            assert "finished_task AS" in statement and "FOR UPDATE OF workflow_jobs" in statement
            assert statement.index("locked_instance AS") < statement.index("finished_task AS")
    assert (await instance(db, iid))["status"] == "approved"
    delays = [t for t in await tasks(db, iid) if t["node_key"] in ("left", "right")]
    assert [(t["status"], t["action"], t["finished_by"]) for t in delays] == [
        ("completed", "handle", "system")
    ] * 2
    assert all(t["finished_at"] == clock.now() for t in delays)
    events = [(r["event"], r["task_id"]) for r in await trace_events(db, iid)]
    assert all(("task_completed", t["id"]) in events for t in delays)


async def test_a_wake_whose_step_has_a_receipt_finishes_nothing_L14(
    db: Database, clock: ManualClock
) -> None:
    """A retried operation reuses its committed result: the step is not run
    again, and the first lock's write does not run either."""
    iid, wait, job = await _delayed(db, clock)
    driver = ledger_driver(db)
    async with db.begin() as conn:  # the step's receipt, as a committed earlier run left it
        now = clock.now()
        await driver.job_lock_fenced_receipt(conn, job.fence, job.operation_key, job.type, now=now)
        receipt = {"skipped": "an earlier run"}
        await driver.receipt_put(conn, job.fence, job.operation_key, job.type, receipt, now=now)
    await _run(db, clock, job)
    assert [t["status"] for t in await tasks(db, iid, node_key="wait")] == ["waiting"]
    assert [t["node_key"] for t in await tokens(db, iid, state="active")] == ["wait"]
    assert (await instance(db, iid))["status"] == "running"
    assert await _attempt_status(db, job.id) == "skipped"
    assert wait not in [
        r["task_id"] for r in await trace_events(db, iid) if r["event"] == "task_completed"
    ]


async def test_a_wake_of_an_instance_no_longer_running_finishes_nothing_E3_L18(
    db: Database, clock: ManualClock
) -> None:
    iid, _wait, job = await _delayed(db, clock)
    async with db.begin() as conn:  # suspended after the wake was claimed
        await conn.execute(
            update(workflow_instances)
            .where(workflow_instances.c.id == iid)
            .values(status="suspended")
        )
    await _run(db, clock, job)
    assert [t["status"] for t in await tasks(db, iid, node_key="wait")] == ["waiting"]
    assert [t["node_key"] for t in await tokens(db, iid, state="active")] == ["wait"]
    assert await _attempt_status(db, job.id) == "skipped"


async def test_a_wake_waits_for_the_instance_and_sees_the_task_its_holder_ended_L13(
    db: Database, clock: ManualClock
) -> None:
    """While another transaction holds the instance row, the wake waits for
    it without holding the task row (PostgreSQL: instance first, L-13);
    the holder cancels the task and commits, and the wake then finds it no
    longer waiting and writes nothing."""
    iid, wait, job = await _delayed(db, clock)
    lock_instance = (
        select(workflow_instances.c.id).where(workflow_instances.c.id == iid).with_for_update()
    )
    cancel = update(workflow_tasks).where(workflow_tasks.c.id == wait).values(status="canceled")
    async with db.begin() as holder:
        await holder.execute(lock_instance)
        woken = asyncio.ensure_future(_run(db, clock, job))
        if not db.is_sqlite:
            await asyncio.sleep(0.3)
            assert not woken.done()  # waiting for the instance row
            probe = select(workflow_tasks.c.id).where(workflow_tasks.c.id == wait)
            async with db.read() as third:
                free = await third.execute(probe.with_for_update(skip_locked=True))
                assert free.first() is not None  # the waiting wake holds no task row
        await holder.execute(cancel)
    await asyncio.wait_for(woken, 10)
    [task] = await tasks(db, iid, node_key="wait")
    assert (task["status"], task["action"]) == ("canceled", None)
    assert await _attempt_status(db, job.id) == "skipped"


async def test_the_job_step_lock_reads_the_instance_and_the_receipt_and_checks_the_fence_L13_L14(
    db: Database, clock: ManualClock
) -> None:
    """The store's first statement without a finish: the instance row (an
    unknown instance: None) and the step's receipt as the ledger's
    ``job_lock_fenced_receipt`` gives it; LeaseLostError for a stale fence
    whether or not the instance exists. PostgreSQL: while another
    transaction holds the instance row, the statement waits and the job row
    is still free (the job is locked after the instance)."""
    iid, _wait, job = await _delayed(db, clock)
    store = new_engine(db, clock).store
    key = job.operation_key

    async def call(fence: Fence, instance_id: int) -> JobStepLocked:
        async with db.begin() as conn:
            now = clock.now()
            return await store.job_step_lock(conn, instance_id, fence, key, "s1", now=now)

    locked = await call(job.fence, iid)
    assert locked.instance is not None and locked.instance["id"] == iid
    assert "snapshot" not in locked.instance
    assert (locked.receipt_found, locked.receipt_result, locked.finished) == (False, None, None)
    driver = ledger_driver(db)
    async with db.begin() as conn:
        await driver.job_lock_fenced_receipt(conn, job.fence, key, "s1", now=clock.now())
        await driver.receipt_put(conn, job.fence, key, "s1", {"r": 1}, now=clock.now())
    locked = await call(job.fence, iid)
    assert (locked.receipt_found, locked.receipt_result) == (True, {"r": 1})
    missing = await call(job.fence, 10**9)
    assert (missing.instance, missing.receipt_found) == (None, True)
    stale = Fence(job.id, job.generation, "other-token", job.execution_id, job.started_at)
    for instance_id in (iid, 10**9):
        with pytest.raises(LeaseLostError):
            await call(stale, instance_id)
    if not db.is_sqlite:
        lock_instance = (
            select(workflow_instances.c.id).where(workflow_instances.c.id == iid).with_for_update()
        )
        probe = select(workflow_jobs.c.id).where(workflow_jobs.c.id == job.id)
        async with db.begin() as holder:
            await holder.execute(lock_instance)
            waiting = asyncio.ensure_future(call(job.fence, iid))
            await asyncio.sleep(0.3)
            assert not waiting.done()  # waiting for the instance row
            async with db.read() as third:
                free = await third.execute(probe.with_for_update(skip_locked=True))
                assert free.first() is not None  # the waiting statement holds no job row
        assert (await asyncio.wait_for(waiting, 10)).receipt_found
