"""The engine store is chosen once and carried by every step (issue 28
items 2 and 4: "Runtime holds the ledger driver and the engine store;
nothing looks a driver up by dialect per call"; SPEC E-3, E-4, E-6).

An engine picks the store of its database's kind when it is built; each step
it opens carries that very object, and a step's writes go through it: an
engine given a recording store sees a start, an approval that forks and the
wakes that join and end the instance all write through the methods of that
one store. Both backends."""

from __future__ import annotations

from typing import Any

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine.store import engine_store
from flowledger.engine.store.postgres import PostgresEngineStore
from flowledger.engine.store.sqlite import SqliteEngineStore
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.models import JobSpec
from tests.integration.engine_helpers import (
    _run_due,
    instance,
    new_engine,
    parallel_delays,
    pending_task,
)
from tests.runtime_support import runtime_for

FLOW = parallel_delays("chosen")


def _recording(store: Any, calls: list[str]) -> Any:
    """A store of ``store``'s class, over its ledger driver, that records the
    name of every method called and every attribute read (``ledger``)."""

    class Recording(type(store)):  # type: ignore[misc]
        def __getattribute__(self, name: str) -> Any:
            found = super().__getattribute__(name)
            if not name.startswith("_"):
                calls.append(name)
            return found

    return Recording(store.ledger)


async def test_the_engine_holds_its_databases_store_and_every_step_carries_it(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    kind = SqliteEngineStore if db.is_sqlite else PostgresEngineStore
    assert type(engine.store) is kind
    assert type(engine_store(db)) is kind
    # the store's ledger driver is the database's: the step's jobs go through it
    assert type(engine.store.ledger) is type(ledger_driver(db))
    await engine.deploy(FLOW, actor="admin")
    iid = await engine.start("chosen", form={}, initiator="u")
    async with db.begin() as conn:
        step = await engine.open_step(conn, iid, actor="ops")
        assert step.store is engine.store


async def test_a_steps_writes_go_through_the_engines_store_E3_E4_E6(
    db: Database, clock: ManualClock
) -> None:
    calls: list[str] = []
    engine = new_engine(db, clock)
    engine.store = _recording(engine.store, calls)
    await engine.deploy(FLOW, actor="admin")
    iid = await engine.start("chosen", form={}, initiator="u")
    assert "instance_insert" in calls
    await engine.approve(await pending_task(db, iid, "mgr"), actor="al")  # forks two delays
    assert "lock_reserving" in calls  # the task's lock, as the store sends it
    if db.is_sqlite:  # the fork at once (PostgreSQL holds it with reserved ids)
        assert "tokens_replace" in calls
    runtime = runtime_for(db, clock, engine=engine)  # the handlers run this engine's steps
    try:
        await _run_due(db, clock, runtime.handlers, 10)  # both wakes: join, end
    finally:
        await runtime.aclose()
    assert (await instance(db, iid))["status"] == "approved"
    assert "instance_end_with_last_token" in calls
    assert "ledger" in calls  # the wakes' jobs and the ending's cleanup: the store's driver
    # the wakes' rows with their jobs' settlements: through the store (one
    # statement each on PostgreSQL)
    assert "step_rows_and_settlement" in calls
    if db.is_sqlite:  # no ids are reserved: the jobs' insert, then the rows
        assert "step_rows_write" in calls
    else:  # the approval's rows with its jobs' insert, the ids reserved
        assert "jobs_and_step_rows_write" in calls


async def test_the_runtime_holds_the_store_and_the_ledger_driver_its_workers_use(
    db: Database, clock: ManualClock
) -> None:
    """Issue 28 item 4: the runtime holds the engine store and its ledger
    driver; a worker it builds runs its job steps (each pool's contexts),
    its leases, heartbeat, drain and leader elections with that very driver,
    and the runtime's own enqueue writes through it."""
    runtime = runtime_for(db, clock)
    assert runtime.store is runtime.engine.store
    assert runtime.ledger is runtime.store.ledger
    worker = runtime.worker()
    holders = [worker, worker.elector, worker.renewer, worker.heartbeat, worker.drain]
    assert all(holder.ledger is runtime.ledger for holder in holders)
    assert all(pool.steps_ledger is runtime.ledger for pool in worker.pools)

    calls: list[str] = []
    driver = runtime.ledger
    original = driver.jobs_insert

    async def recorded(*args: Any, **kwargs: Any) -> Any:
        calls.append("jobs_insert")
        return await original(*args, **kwargs)

    driver.jobs_insert = recorded  # type: ignore[method-assign]
    try:
        (result,) = await runtime.enqueue(JobSpec(type="delay_wake", payload={"taskId": 0}))
    finally:
        del driver.jobs_insert  # type: ignore[method-assign]
    assert calls == ["jobs_insert"]
    assert result.job_id > 0
