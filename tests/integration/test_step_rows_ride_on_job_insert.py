"""A step's buffered rows ride after the insert of its new jobs (issue 15
item 2; SPEC E-8, E-10, L-1): on PostgreSQL the flush before a commit
writes the jobs, the token moves, the outbox, the form writes and the trace
rows in one statement, the jobs' ``job_enqueued`` trace rows taking the new
jobs' ids there; on SQLite, and for jobs with idempotencyKeys, the jobs go
first and the rows after, as before. Either way the trace names the jobs
and keeps the steps' order. Both backends."""

from __future__ import annotations

from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_trace
from flowledger.db.schema import workflow_jobs
from flowledger.engine.job_types import engine_job_type
from flowledger.engine.write_buffer import add_job, add_trace, open_buffer
from flowledger.ledger.models import JobSpec
from tests import statement_watch
from tests.integration.engine_helpers import (
    jobs,
    new_engine,
    parallel_delays,
    pending_task,
    tasks,
    trace_events,
)


async def test_an_approvals_jobs_and_rows_are_one_statement_E8_L1(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(parallel_delays("ride_jobs"), actor="admin")
    iid = await engine.start("ride_jobs", form={}, initiator="u")
    task_id = await pending_task(db, iid, "mgr")
    with statement_watch.watched(db) as seen:
        await engine.approve(task_id, actor="al")
    trace_writes = [s for s in seen if "INSERT INTO workflow_trace" in s]
    job_inserts = [s for s in seen if "INSERT INTO workflow_jobs" in s]
    assert len(trace_writes) == 1 and len(job_inserts) == 1
    if db.is_sqlite:  # the jobs first, then the rows
        assert trace_writes != job_inserts
    else:  # the rows ride after the jobs' insert
        assert trace_writes == job_inserts
    wakes = await jobs(db, iid, type="delay_wake")
    delays = [t for t in await tasks(db, iid) if t["node_key"] in ("left", "right")]
    assert [j["task_id"] for j in wakes] == [t["id"] for t in delays]
    events = [(r["event"], r["task_id"], r["job_id"]) for r in await trace_events(db, iid)]
    enqueued = [(task, job) for event, task, job in events if event == "job_enqueued"]
    assert enqueued == [(j["task_id"], j["id"]) for j in wakes]
    for delay in delays:  # each branch's task is created before its wake is enqueued
        created = events.index(("task_created", delay["id"], None))
        assert created < [e[:2] for e in events].index(("job_enqueued", delay["id"]))
    async with db.read() as conn:  # the trace rows' ids ascend in the steps' order
        ids = list(
            (
                await conn.execute(
                    select(workflow_trace.c.id)
                    .where(workflow_trace.c.instance_id == iid)
                    .order_by(workflow_trace.c.created_at, workflow_trace.c.id)
                )
            ).scalars()
        )
    assert ids == sorted(ids)


async def test_jobs_with_idempotency_keys_are_inserted_before_the_rows_L1_L15(
    db: Database, clock: ManualClock
) -> None:
    """A key already taken names an existing job: those jobs go first (and
    their ids are looked up), the rows after, on both backends."""
    engine = new_engine(db, clock)
    await engine.deploy(parallel_delays("ride_keyed"), actor="admin")
    iid = await engine.start("ride_keyed", form={}, initiator="u")
    now = clock.now()
    spec = JobSpec(type=engine_job_type("delay_wake"), idempotency_key="ride:keyed")
    for attempt in range(2):
        row = {
            "instance_id": iid,
            "trace_id": "t-keyed",
            "event": "job_enqueued",
            "node_key": None,
            "token_id": None,
            "task_id": None,
            "job_id": None,
            "detail": {"attempt": attempt},
            "created_at": now,
        }
        with statement_watch.watched(db) as seen:
            async with db.begin() as conn:
                assert open_buffer(conn, engine.store) is not None  # as a step opens it
                await add_job(conn, spec, now=now, trace_row=row, ledger=engine.store.ledger)
                await add_trace(conn, {**row, "event": "after", "detail": None})
        assert not [s for s in seen if "INSERT INTO workflow_trace" in s and "workflow_jobs" in s]
    async with db.read() as conn:
        keyed = select(workflow_jobs.c.id).where(workflow_jobs.c.idempotency_key == "ride:keyed")
        [job_id] = (await conn.execute(keyed)).scalars().all()
        traced = (
            await conn.execute(
                select(workflow_trace.c.event, workflow_trace.c.job_id)
                .where(workflow_trace.c.trace_id == "t-keyed")
                .order_by(workflow_trace.c.id)
            )
        ).all()
    assert [tuple(r) for r in traced] == [
        ("job_enqueued", job_id),
        ("after", None),
        ("job_enqueued", job_id),  # the second attempt's key named the first job
        ("after", None),
    ]
