"""The engine step's cheaper paths (issue 15 item 2) keep their meaning
(SPEC E-2, E-3, L-13, L-22): a delay is woken by one checked write and says
why when it cannot be; the snapshot a step runs on is the instance's own,
read on a cache miss; jobs buffered by a step carry their ids into the trace
and are seen by the cleanup of an instance ending in the same transaction."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select, update

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import (
    workflow_definitions,
    workflow_form_writes,
    workflow_instances,
    workflow_tokens,
)
from flowledger.db.schema import workflow_jobs
from flowledger.engine import Engine, lifecycle
from flowledger.engine.async_steps import wake_delay
from flowledger.engine.instances import start_instance
from flowledger.states import InstanceStatus
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    jobs,
    new_engine,
    pending_task,
    run_due_jobs,
    tasks,
    tokens,
    trace_events,
)

DELAYED = definition(
    "delayed",
    [START, {"key": "wait", "type": "delay", "duration": "PT1H"}, approval("mgr", "al"), END],
    [("start", "wait"), ("wait", "mgr"), ("mgr", "end")],
)


async def _delayed(db: Database, clock: ManualClock) -> tuple[Engine, int, int]:
    engine = new_engine(db, clock)
    await engine.deploy(DELAYED, actor="admin")
    iid = await engine.start("delayed", form={}, initiator="u")
    [wait] = await tasks(db, iid, node_key="wait")
    return engine, iid, int(wait["id"])


async def _wake(engine: Engine, iid: int, task_id: int) -> str | None:
    async with engine.db.begin() as conn, engine.step(conn, iid, "system") as step:
        return await wake_delay(step, task_id)


async def test_a_woken_delay_finishes_its_task_and_moves_on_E3(
    db: Database, clock: ManualClock
) -> None:
    engine, iid, wait = await _delayed(db, clock)
    assert await _wake(engine, iid, wait) is None
    [task] = await tasks(db, iid, node_key="wait")
    assert (task["status"], task["action"], task["finished_by"]) == (
        "completed",
        "handle",
        "system",
    )
    assert task["finished_at"] == clock.now()
    [token] = await tokens(db, iid, state="active")
    assert token["node_key"] == "mgr"
    events = [(r["event"], r["task_id"]) for r in await trace_events(db, iid)]
    assert ("task_completed", wait) in events
    # a second wake finds the task done and writes nothing
    assert await _wake(engine, iid, wait) == f"task {wait} is no longer waiting"
    assert [r["event"] for r in await trace_events(db, iid)] == [e for e, _ in events]


async def test_a_delay_whose_token_is_gone_is_not_woken_E3(
    db: Database, clock: ManualClock
) -> None:
    engine, iid, wait = await _delayed(db, clock)
    async with db.begin() as conn:  # the token consumed behind the engine's back
        await conn.execute(
            update(workflow_tokens)
            .where(workflow_tokens.c.instance_id == iid)
            .values(state="consumed")
        )
    assert await _wake(engine, iid, wait) == f"task {wait} holds no active token"
    [task] = await tasks(db, iid, node_key="wait")
    assert task["status"] == "waiting"  # nothing written
    await engine.suspend(iid, actor="ops")
    assert await _wake(engine, iid, wait) == "instance is suspended"


async def test_a_step_runs_on_the_instance_snapshot_read_on_a_cache_miss_E2(
    db: Database, clock: ManualClock
) -> None:
    engine, iid, wait = await _delayed(db, clock)
    async with db.read() as conn:
        snapshot = (
            await conn.execute(
                select(workflow_instances.c.snapshot).where(workflow_instances.c.id == iid)
            )
        ).scalar_one()
        source = (await conn.execute(select(workflow_definitions.c.source))).scalar_one()
        changes = (
            await conn.execute(
                select(workflow_form_writes.c.changes).where(
                    workflow_form_writes.c.instance_id == iid
                )
            )
        ).scalar_one()
    assert snapshot == source  # frozen at start, copied from the version
    assert changes == {}
    # a new version routes the delay elsewhere; the running instance keeps its own
    redeployed = definition(
        "delayed",
        [START, {"key": "wait", "type": "delay", "duration": "PT1H"}, approval("ops", "bo"), END],
        [("start", "wait"), ("wait", "ops"), ("ops", "end")],
    )
    await engine.deploy(redeployed, actor="admin")
    fresh = new_engine(db, clock)  # an empty snapshot cache: the step reads the column
    assert fresh.snapshots.cached(int((await instance(db, iid))["definition_id"])) is None
    assert await _wake(fresh, iid, wait) is None
    assert await pending_task(db, iid, "mgr") > 0


async def test_buffered_jobs_carry_their_ids_into_the_trace_L13(
    db: Database, clock: ManualClock
) -> None:
    _engine, iid, wait = await _delayed(db, clock)
    [job] = await jobs(db, iid, type="delay_wake")
    enqueued = [r for r in await trace_events(db, iid) if r["event"] == "job_enqueued"]
    assert [(r["job_id"], r["task_id"], r["node_key"]) for r in enqueued] == [
        (job["id"], wait, "wait")
    ]
    assert job["payload"] == {"taskId": wait}
    clock.advance(seconds=3600)
    assert await run_due_jobs(db, clock) == 1
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["mgr"]


async def test_an_instance_ended_in_the_step_that_enqueued_cancels_the_job_L22(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(DELAYED, actor="admin")
    async with db.begin() as conn:
        iid = await start_instance(
            conn,
            "delayed",
            form={},
            initiator="u",
            tenant="default",
            now=clock.now(),
            snapshots=engine.snapshots,
            hooks=engine.hooks,
            store=engine.store,
        )
        step = await engine.open_step(conn, iid, actor="ops")
        await lifecycle.terminate(step, InstanceStatus.CANCELED, "changed my mind")
    [job] = await jobs(db, iid, type="delay_wake")
    assert job["status"] == "canceled"
    finished = [r for r in await trace_events(db, iid) if r["event"] == "instance_finished"]
    assert finished[0]["detail"]["canceledJobs"] == [job["id"]]
    assert (await instance(db, iid))["status"] == "canceled"


async def test_a_step_outside_database_begin_enqueues_at_once(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(DELAYED, actor="admin")
    async with db.engine.begin() as conn:
        iid = await start_instance(
            conn,
            "delayed",
            form={},
            initiator="u",
            tenant="default",
            now=clock.now(),
            snapshots=engine.snapshots,
            hooks=engine.hooks,
            store=engine.store,
        )
        # no write buffer here: the job is written before the transaction ends
        found: Any = (
            await conn.execute(
                select(workflow_jobs.c.type).where(workflow_jobs.c.instance_id == iid)
            )
        ).scalar_one()
        assert found == "delay_wake"
    [job] = await jobs(db, iid, type="delay_wake")
    [row] = [r for r in await trace_events(db, iid) if r["event"] == "job_enqueued"]
    assert row["job_id"] == job["id"]
