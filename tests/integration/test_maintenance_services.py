"""Maintenance services in one shape, behind one leader elector (SPEC L-20,
L-6; issue 16 items 3, 4).

Covers: a service's interval and jitter are validated when it is built; the
``ran`` signal and the run counter; the elector leads a lease for its
holder only, and ``resign`` releases what it holds (and nothing another
holder took); a worker built by the runtime runs the leader-gated
maintenance services under its node id and resigns them all when it stops;
the supervisor stops every part when one dies, and a worker whose service
dies stops by itself; the runtime's engine has the failure policies and one
built with ``compensation=False`` has none.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import system_leader_leases as leases
from flowledger.engine.hooks import NO_HOOKS
from flowledger.errors import ConfigurationError
from flowledger.handlers.health_service import HealthSnapshots
from flowledger.handlers.services import SchedulePlanner
from flowledger.ops.alerts.service import AlertEvaluator
from flowledger.runtime import build_runtime
from flowledger.worker.leader import LeaderElector
from flowledger.worker.services import DRAIN_TASK, PeriodicService
from flowledger.worker.supervisor import supervise
from flowledger.worker.worker import Worker
from tests.integration.worker_helpers import worker_config


class Counting(PeriodicService):
    name = "counting"

    async def run_once(self) -> None:
        pass


class Dying(PeriodicService):
    name = "dying"

    async def run(self, stop: asyncio.Event) -> None:  # an error escaping the loop
        raise RuntimeError("the loop itself broke")


async def holders(db: Database) -> dict[str, str]:
    async with db.read() as conn:
        rows = (await conn.execute(select(leases.c.name, leases.c.holder))).all()
    return {r.name: r.holder for r in rows}


def test_a_service_refuses_a_bad_interval_or_jitter() -> None:
    with pytest.raises(ConfigurationError) as bad:
        Counting(0)
    assert bad.value.field == "interval_s"
    with pytest.raises(ConfigurationError) as wide:
        Counting(1, jitter=0.9)
    assert wide.value.field == "jitter"
    assert 0.9 <= Counting(10, jitter=0.1).next_delay() <= 11.0


async def test_the_ran_signal_counts_runs() -> None:
    service, stop = Counting(0.01, jitter=0), asyncio.Event()
    task = asyncio.ensure_future(service.run(stop))
    await asyncio.wait_for(service.ran.wait(), 5)
    stop.set()
    await task
    assert service.runs >= 1 and service.last_error is None


async def test_the_heavy_maintenance_reads_wait_one_interval_after_the_start() -> None:
    """The health snapshots and the alert evaluation do not run beside a
    starting worker's first claims (issue 34 item 4): their first run comes
    one interval after the start; a stop meanwhile ends them without one."""
    assert not HealthSnapshots.run_at_start and not AlertEvaluator.run_at_start
    late, stop = Counting(0.3, jitter=0), asyncio.Event()
    late.run_at_start = False
    task = asyncio.ensure_future(late.run(stop))
    await asyncio.sleep(0.1)
    assert late.runs == 0
    await asyncio.wait_for(late.ran.wait(), 5)
    stop.set()
    await task
    assert late.runs == 1
    stopped = Counting(60, jitter=0)
    stopped.run_at_start = False
    stop = asyncio.Event()
    stop.set()
    await asyncio.wait_for(stopped.run(stop), 1)
    assert stopped.runs == 0


async def test_the_elector_leads_for_its_holder_and_resigns_L20(
    db: Database, clock: ManualClock
) -> None:
    a, b = LeaderElector(db, "node-a"), LeaderElector(db, "node-b")
    ttl = timedelta(seconds=60)
    async with db.begin() as conn:
        assert await a.lead(conn, "task-1", now=clock.now(), ttl=ttl)
        assert await a.lead(conn, "task-2", now=clock.now(), ttl=ttl)
        assert not await b.lead(conn, "task-1", now=clock.now(), ttl=ttl)
    assert await a.resign() == ["task-1", "task-2"]
    assert await holders(db) == {}
    async with db.begin() as conn:
        assert await b.lead(conn, "task-1", now=clock.now(), ttl=ttl)
    assert await a.resign() == []  # holds nothing any more
    assert await holders(db) == {"task-1": "node-b"}


async def test_a_runtime_worker_leads_maintenance_and_resigns_on_stop_L20(
    db: Database, clock: ManualClock
) -> None:
    runtime = build_runtime(db=db, clock=clock)
    worker = runtime.worker(worker_config(drain_interval_s=0.05))
    names = {s.name for s in worker.extra_services}
    assert {"schedule_planner", "event_relay", "workflow-alert-evaluate"} <= names
    assert {"workflow-health-snapshot", "data-retention", "history-partitions"} <= names
    stop = asyncio.Event()
    run = asyncio.ensure_future(worker.run(stop))
    planner = next(s for s in worker.extra_services if isinstance(s, SchedulePlanner))
    await asyncio.wait_for(worker.started.wait(), 10)
    await asyncio.wait_for(planner.ran.wait(), 10)
    await asyncio.wait_for(worker.drain.ran.wait(), 10)
    held = await holders(db)
    assert held[DRAIN_TASK] == held["schedule_planner"] == worker.node.id
    stop.set()
    await asyncio.wait_for(run, 30)
    assert worker.node.id not in (await holders(db)).values()


async def test_the_supervisor_stops_every_part_when_one_dies() -> None:
    seen_stop = asyncio.Event()

    async def dies(stop: asyncio.Event) -> None:
        raise RuntimeError("boom")

    async def waits(stop: asyncio.Event) -> None:
        await stop.wait()
        seen_stop.set()

    ended = await asyncio.wait_for(supervise(asyncio.Event(), {"a": dies, "b": waits}), 5)
    assert ended is not None and ended.name == "a" and str(ended.error) == "boom"
    assert seen_stop.is_set()


async def test_a_worker_whose_service_dies_stops_by_itself(
    db: Database, clock: ManualClock
) -> None:
    worker = Worker(
        db, worker_config(), clock=clock, extra_services=lambda db, clock, elector: [Dying(1)]
    )
    await asyncio.wait_for(worker.run(asyncio.Event()), 30)  # nobody sets the stop event
    assert worker.started.is_set()


def test_the_runtime_engine_has_the_policies_unless_told_otherwise(db: Database) -> None:
    assert build_runtime(db=db).engine.hooks.has_failure_policies
    bare = build_runtime(db=db, compensation=False)
    assert bare.engine.hooks is NO_HOOKS and not bare.engine.hooks.has_failure_policies
