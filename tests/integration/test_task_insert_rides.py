"""A step's new tasks ride on its last statement (issue 15 item 2; SPEC E-5),
on both backends.

On PostgreSQL a start and a task's step reserve task ids in the statement
that inserts the instance or locks it (``engine/store/reserved_ids.py``); a task created
with a reserved id is inserted with the step's other rows, in the statement
that writes them, instead of in a round trip of its own. Nothing writes it
behind a statement's back (issue 28 item 3): a plain read sends only
itself and does not see it; the engine's reads of tasks, forks and tokens
write the held rows first, at their call site (``write_held``,
``flush_for_read``), and the commit writes what is still held. SQLite
reserves nothing and inserts each task when it is created; the results
are the same."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import func, select, text

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_forks, workflow_tasks
from flowledger.engine import Engine, write_buffer
from flowledger.engine.job_types import engine_job_type
from flowledger.engine.step import lock_task_instance
from flowledger.engine.tasks import create_task
from flowledger.ledger.models import JobSpec
from flowledger.states import TaskStatus
from tests import statement_watch
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    jobs,
    new_engine,
    parallel_delays,
    pending_task,
    run_due_jobs,
    tasks,
    tokens,
    trace_events,
)

FLOW = parallel_delays("rides")
# a fork whose one branch goes straight to the join: it parks there in the
# step that forks (the join's read there writes the held fork first)
SHORT_BRANCH = definition(
    "short_branch",
    [
        START,
        approval("mgr", "al"),
        {"key": "fork", "type": "parallel"},
        approval("a", "ann"),
        {"key": "join", "type": "parallel"},
        END,
    ],
    [
        ("start", "mgr"),
        ("mgr", "fork"),
        ("fork", "a"),
        ("fork", "join"),
        ("a", "join"),
        ("join", "end"),
    ],
)
# a fork whose branch passes an exclusive gateway in the step that forks:
# the branch token moves on before the fork's rows are written
ROUTED_BRANCH = definition(
    "routed_branch",
    [
        START,
        approval("mgr", "al"),
        {"key": "fork", "type": "parallel"},
        {"key": "route", "type": "exclusive"},
        approval("a", "ann"),
        approval("b", "bob"),
        {"key": "join", "type": "parallel"},
        END,
    ],
    [
        ("start", "mgr"),
        ("mgr", "fork"),
        ("fork", "route"),
        ("fork", "b"),
        {"from": "route", "to": "a", "default": True},
        ("a", "join"),
        ("b", "join"),
        ("join", "end"),
    ],
)


async def forks(db: Database, instance_id: int) -> list[dict[str, Any]]:
    query = select(workflow_forks).where(workflow_forks.c.instance_id == instance_id)
    async with db.read() as conn:
        return [dict(r) for r in (await conn.execute(query)).mappings()]


def _task_inserts(seen: list[str]) -> list[str]:
    return [s for s in seen if "INSERT INTO workflow_tasks" in s]


async def test_a_start_and_an_approval_send_their_new_tasks_with_their_rows_E5(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(FLOW, actor="a")
    await engine.start("rides", form={}, initiator="u")  # the definition is cached since
    with statement_watch.watched(db) as started:
        iid = await engine.start("rides", form={}, initiator="u")
    task_id = await pending_task(db, iid, "mgr")
    with statement_watch.watched(db) as approved:
        await engine.approve(task_id, actor="al")

    if not db.is_sqlite:
        # the approval task: inserted in the start's last statement, with its
        # trace rows and event (the instance's insert is the other one)
        assert len(started) == 2, started
        assert [len(_task_inserts([s])) for s in started] == [0, 1]
        # the fork and the two delay tasks: in the statement that inserts
        # their wake jobs
        assert len(_task_inserts(approved)) == 1, approved
        (carrier,) = _task_inserts(approved)
        assert "INSERT INTO workflow_jobs" in carrier
        assert "INSERT INTO workflow_forks" in carrier
        # the lock, the task's completion, and the jobs with every row
        assert len(approved) == 3, approved

    made = await tasks(db, iid)
    assert [(t["node_key"], t["kind"], t["status"]) for t in made] == [
        ("mgr", "approval", "completed"),
        ("left", "delay", "waiting"),
        ("right", "delay", "waiting"),
    ]
    ids = [t["id"] for t in made]
    assert ids == sorted(ids) and ids[0] == task_id  # in the order they were created
    waits = {t["node_key"]: t["id"] for t in made[1:]}
    wakes = await jobs(db, iid, type="delay_wake")
    assert sorted((j["node_key"], j["task_id"], j["payload"]["taskId"]) for j in wakes) == [
        ("left", waits["left"], waits["left"]),
        ("right", waits["right"], waits["right"]),
    ]
    all_tokens = await tokens(db, iid)
    assert [(t["node_key"], t["state"]) for t in all_tokens] == [
        ("fork", "consumed"),
        ("left", "active"),
        ("right", "active"),
    ]
    (frame,) = await forks(db, iid)
    assert (frame["node_key"], frame["expected"]) == ("fork", 2)
    assert [t["fork_stack"] for t in all_tokens[1:]] == [[frame["id"]], [frame["id"]]]
    assert [t["token_id"] for t in made[1:]] == [t["id"] for t in all_tokens[1:]]
    created = [
        (r["node_key"], r["task_id"])
        for r in await trace_events(db, iid)
        if r["event"] == "task_created"
    ]
    assert created == [("mgr", task_id), ("left", waits["left"]), ("right", waits["right"])]


async def _new_task(db: Database, engine: Any, iid: int, conn: Any) -> int:
    step = await engine.open_step(conn, iid, actor="t")
    if not db.is_sqlite:  # a reserved id, as a start's or a task lock's
        step.reserved.tasks = [
            int((await conn.execute(text("SELECT nextval('workflow_tasks_id_seq')"))).scalar_one())
        ]
    return await create_task(
        step,
        node_key="mgr",
        token_id=None,
        kind="cc",
        status=TaskStatus.CC,
        assignee="zoe",
    )


async def test_a_read_never_writes_a_held_task_the_steps_task_read_writes_it_first_E5(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(FLOW, actor="a")
    iid = await engine.start("rides", form={}, initiator="u")
    count = (
        select(func.count()).select_from(workflow_tasks).where(workflow_tasks.c.instance_id == iid)
    )
    with statement_watch.watched(db) as seen:
        async with db.begin() as conn:
            new_id = await _new_task(db, engine, iid, conn)
            plain = (await conn.execute(count)).scalar_one()
            if not db.is_sqlite:
                assert plain == 1  # a plain read sends itself only: the task is still held
                assert not _task_inserts(seen)
            await write_buffer.flush_for_read(conn)  # what a task read of the engine does first
            assert (await conn.execute(count)).scalar_one() == 2
    assert len(_task_inserts(seen)) == 1  # inserted once, by the named flush
    assert [t["id"] for t in await tasks(db, iid, assignee="zoe")] == [new_id]


async def test_a_task_still_held_at_commit_is_written_with_it_E5(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(FLOW, actor="a")
    iid = await engine.start("rides", form={}, initiator="u")
    with statement_watch.watched(db) as seen:
        async with db.begin() as conn:
            new_id = await _new_task(db, engine, iid, conn)
    assert len(_task_inserts(seen)) == 1
    assert [t["id"] for t in await tasks(db, iid, assignee="zoe")] == [new_id]


async def test_a_task_held_back_in_a_rolled_back_step_is_never_sent_E5(
    db: Database, clock: ManualClock
) -> None:
    one = Database(db.raw_url, pool_size=1)  # the next transaction gets the same connection
    try:
        engine = new_engine(one, clock)
        await engine.deploy(FLOW, actor="a")
        iid = await engine.start("rides", form={}, initiator="u")
        with pytest.raises(RuntimeError), statement_watch.watched(one) as seen:
            async with one.begin() as conn:
                await _new_task(one, engine, iid, conn)
                raise RuntimeError("the step fails")
        if not one.is_sqlite:
            assert not _task_inserts(seen)
        with statement_watch.watched(one) as later:
            async with one.begin() as conn:
                await conn.execute(text("SELECT 1"))
        assert not _task_inserts(later)
        assert [t["node_key"] for t in await tasks(one, iid)] == ["mgr"]
    finally:
        await one.dispose()


async def test_a_task_lock_reserves_its_ids_only_once_it_holds_the_lock_E5(
    db: Database, clock: ManualClock
) -> None:
    """Two steps on one instance: the second waits for the first's lock, and
    the first creates a task (by a plain insert) while it waits. The
    second's reserved ids come after that task's: drawn before its wait,
    they would come before it, and the instance's task ids would no longer
    follow the order its tasks were made in."""
    if db.is_sqlite:
        pytest.skip("SQLite reserves no task ids (one writer at a time)")
    engine = new_engine(db, clock)
    await engine.deploy(FLOW, actor="a")
    iid = await engine.start("rides", form={}, initiator="u")
    task_id = await pending_task(db, iid, "mgr")
    async with db.begin() as first:
        held = await lock_task_instance(first, task_id, engine.store)
        reserved_first = [held["reserved_task_0"], held["reserved_task_1"]]
        waiting = asyncio.ensure_future(_lock_in_own_transaction(db, task_id, engine))
        await asyncio.sleep(0.3)
        assert not waiting.done()  # it waits for the instance lock
        step = await engine.open_step(first, iid, actor="t", locked=held)
        step.reserved.tasks = []  # the first step's later task draws its own id
        made = await create_task(
            step, node_key="mgr", token_id=None, kind="cc", status=TaskStatus.CC, assignee="zoe"
        )
    second = await asyncio.wait_for(waiting, 10)
    assert max(reserved_first) < made < min(second)


async def _lock_in_own_transaction(db: Database, task_id: int, engine: Engine) -> list[int]:
    async with db.begin() as conn:
        row = await lock_task_instance(conn, task_id, engine.store)
        return [row["reserved_task_0"], row["reserved_task_1"]]


async def test_a_held_forks_branch_that_reaches_the_join_in_the_same_step_parks_there_E4(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(SHORT_BRANCH, actor="a")
    iid = await engine.start("short_branch", form={}, initiator="u")
    await engine.approve(await pending_task(db, iid, "mgr"), actor="al")
    placed = [(t["node_key"], t["state"]) for t in await tokens(db, iid)]
    assert placed == [("fork", "consumed"), ("a", "active"), ("join", "parked")]
    await engine.approve(await pending_task(db, iid, "a"), actor="ann")
    await run_due_jobs(db, clock)
    assert (await instance(db, iid))["status"] == "approved"
    assert [t["state"] for t in await tokens(db, iid)] == ["consumed"] * 4


async def test_a_held_forks_branch_that_moves_on_in_the_same_step_is_inserted_there_E4(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(ROUTED_BRANCH, actor="a")
    iid = await engine.start("routed_branch", form={}, initiator="u")
    mgr = await pending_task(db, iid, "mgr")
    with statement_watch.watched(db) as approved:
        await engine.approve(mgr, actor="al")
    if not db.is_sqlite:  # the fork, its move past the gateway and the tasks: one statement
        assert len(approved) == 3, approved
    placed = [(t["node_key"], t["state"]) for t in await tokens(db, iid)]
    assert placed == [("fork", "consumed"), ("a", "active"), ("b", "active")]
    await engine.approve(await pending_task(db, iid, "a"), actor="ann")
    await engine.approve(await pending_task(db, iid, "b"), actor="bob")
    assert (await instance(db, iid))["status"] == "approved"


async def test_a_steps_jobs_are_named_by_reserved_ids_in_their_trace_rows_E8_L1(
    db: Database, clock: ManualClock
) -> None:
    """Issue 28: the approval's two wake jobs take ids its lock reserved; their
    job_enqueued trace rows name those ids, and they ride in the jobs' own
    insert with the rest of the step's rows (no position matching)."""
    engine = new_engine(db, clock)
    await engine.deploy(FLOW, actor="a")
    iid = await engine.start("rides", form={}, initiator="u")
    with statement_watch.watched(db) as approved:
        await engine.approve(await pending_task(db, iid, "mgr"), actor="al")
    wakes = await jobs(db, iid, type="delay_wake")
    named = [r["job_id"] for r in await trace_events(db, iid) if r["event"] == "job_enqueued"]
    assert named == sorted(j["id"] for j in wakes)  # in the order made, ascending
    if not db.is_sqlite:
        (carrier,) = [s for s in approved if "INSERT INTO workflow_jobs" in s]
        assert "id bigint" in carrier  # the ids come with the rows
        assert "job_ids" not in carrier and "job_ord" not in carrier


async def test_job_ids_ascend_in_the_order_a_step_made_its_jobs_E8_L1(
    db: Database, clock: ManualClock
) -> None:
    """A job with an idempotencyKey, or one inserted at once, draws its id at
    its insert: the jobs made before it keep lower ids, the ids reserved for
    later ones are forgone, so an instance's job ids follow the order its
    jobs were made on both backends."""
    engine = new_engine(db, clock)
    await engine.deploy(FLOW, actor="a")
    iid = await engine.start("rides", form={}, initiator="u")
    task_id = await pending_task(db, iid, "mgr")
    async with db.begin() as conn:
        held = await lock_task_instance(conn, task_id, engine.store)
        step = await engine.open_step(conn, iid, actor="t", locked=held)
        await step.enqueue("delay_wake", payload={"n": 1}, node_key="a")
        await step.enqueue("delay_wake", payload={"n": 2}, node_key="b", idempotency_key="k-2")
        await step.insert_job_now(_spec(step, 3))
        await step.enqueue("delay_wake", payload={"n": 4}, node_key="d")
    made = sorted(await jobs(db, iid, type="delay_wake"), key=lambda j: j["id"])
    assert [j["payload"]["n"] for j in made] == [1, 2, 3, 4]


def _spec(step: Any, n: int) -> JobSpec:
    return JobSpec(
        type=engine_job_type("delay_wake"),
        payload={"n": n},
        trace_id=step.trace_id,
        tenant_id=step.instance["tenant_id"],
        instance_id=step.instance_id,
        node_key="c",
    )
