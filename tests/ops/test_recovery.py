"""Targeted recovery (SPEC O-18, L-17, L-20, L-24) on both backends: each
action's preview lists exactly what its run then touches, only its own job
types, and recreated jobs advance their instances under a real worker.

Conditions that only a crash can cause (a wake job that vanished, a join
job never written) are made by a direct delete; the rest arise through the
engine (a delay that waits, a child that ends, a receiver that answers 500
to an unsafe POST)."""

from __future__ import annotations

import asyncio
from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import delete, select, update

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox as outbox
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs
from flowledger.engine import Engine
from flowledger.errors import FlowledgerError, NotFoundError
from flowledger.events.outbox import ensure_dispatch_job
from flowledger.ops.recovery.actions import recovery_run
from flowledger.ops.recovery.model import ACTIONS, RecoveryFilter, UnknownRecoveryAction
from flowledger.ops.recovery.plan import recovery_preview
from flowledger.settings import Settings
from flowledger.states import Pool
from tests.integration.engine_helpers import (
    END,
    START,
    definition,
    instance,
    jobs,
    pending_task,
    run_due_jobs,
    tasks,
)
from tests.integration.worker_helpers import running_worker, wait_until
from tests.ledger_access import ledger_of
from tests.ops.rows import add_execution, add_job
from tests.outbound import conftest as outbound_fixtures
from tests.outbound.receivers import Receiver
from tests.runtime_support import default_engine

receiver = outbound_fixtures.receiver
other_receiver = outbound_fixtures.other_receiver
outbound_env = outbound_fixtures.outbound_env

EVERYONE = RecoveryFilter()


def _delay_def() -> dict[str, Any]:
    nodes = [
        START,
        {"key": "wait", "type": "delay", "duration": "PT1H"},
        {"key": "after", "type": "handle", "assignees": {"users": ["hal"]}},
        END,
    ]
    return definition("nap", nodes, [("start", "wait"), ("wait", "after"), ("after", "end")])


async def _delete_jobs(db: Database, job_ids: list[int]) -> None:
    async with db.begin() as conn:
        await conn.execute(delete(executions).where(executions.c.job_id.in_(job_ids)))
        await conn.execute(delete(workflow_jobs).where(workflow_jobs.c.id.in_(job_ids)))


async def _set_job(db: Database, job_id: int, **values: Any) -> None:
    async with db.begin() as conn:
        await conn.execute(
            update(workflow_jobs).where(workflow_jobs.c.id == job_id).values(**values)
        )


def _keys(items: list[Any]) -> list[tuple[Any, ...]]:
    return [(i.action, i.target, i.job_id, i.task_id, i.outbox_id) for i in items]


async def _preview_then_run(
    db: Database, engine: Engine, action: str, flt: RecoveryFilter = EVERYONE
) -> Any:
    now = engine.clock.now()
    plan = await recovery_preview(db, action, flt, now=now)
    run = await recovery_run(
        db,
        action,
        flt,
        now=now,
        snapshots=engine.snapshots,
        hooks=engine.hooks,
        actor="ops",
        rate=200,
    )
    assert _keys([r.item for r in run.items]) == _keys(plan.items)  # preview equals run
    return plan, run


# ----------------------------------------------------------------- delay-wake


async def test_delay_wake_recreates_a_lost_wake_job_and_retries_a_dead_one_O18(
    db: Database, clock: ManualClock
) -> None:
    engine = default_engine(db, clock)
    await engine.deploy(_delay_def(), actor="admin")
    lost = await engine.start("nap", form={}, initiator="ann")
    dead = await engine.start("nap", form={}, initiator="ann")
    lost_job = (await jobs(db, lost, type="delay_wake"))[0]
    dead_job = (await jobs(db, dead, type="delay_wake"))[0]
    await _delete_jobs(db, [lost_job["id"]])  # only a crash loses it
    await _set_job(db, dead_job["id"], status="dead", last_error="boom")
    # another type's dead job: delay-wake must not touch it
    other = await add_job(db, clock.now(), type="webhook_delivery", status="dead")

    plan, run = await _preview_then_run(db, engine, "delay-wake")
    assert sorted((i.action, i.instance_id) for i in plan.items) == sorted(
        [("retry", dead), ("recreate", lost)]
    )
    assert {i.job_type for i in plan.items} == {"delay_wake"}
    assert run.totals() == {"total": 2, "done": 2, "skipped": 0, "failed": 0}
    other_row = (await jobs_by_id(db, [other]))[0]
    assert other_row["status"] == "dead" and other_row["generation"] == 1
    dead_after = (await jobs_by_id(db, [dead_job["id"]]))[0]
    assert dead_after["status"] == "pending" and dead_after["generation"] == 2
    # the recreated job waits for the delay's own due time, not for now
    recreated = (await jobs(db, lost, type="delay_wake"))[0]
    waiting = (await tasks(db, lost, status="waiting"))[0]
    assert recreated["run_at"] == waiting["due_at"]
    assert recreated["replay_batch_id"] == run.batch_id

    clock.advance(seconds=7200)
    async with running_worker(db, clock):
        for iid in (lost, dead):

            async def moved(iid: int = iid) -> bool:
                return bool(await tasks(db, iid, status="pending", node_key="after"))

            await wait_until(moved, what=f"instance {iid} to leave the delay")
    # nothing left to recover
    assert (await recovery_preview(db, "delay-wake", EVERYONE, now=clock.now())).items == []


async def jobs_by_id(db: Database, ids: list[int]) -> list[dict[str, Any]]:
    async with db.read() as conn:
        rows = await conn.execute(
            select(workflow_jobs).where(workflow_jobs.c.id.in_(ids)).order_by(workflow_jobs.c.id)
        )
        return [dict(r) for r in rows.mappings().all()]


async def test_reclaim_and_wake_stay_within_the_action_types_O18(
    db: Database, clock: ManualClock
) -> None:
    engine = default_engine(db, clock)
    now = clock.now()
    overdue = await add_job(
        db, now - timedelta(hours=1), type="delay_wake", pool=Pool.LEDGER.value, run_at=now
    )
    fresh = await add_job(db, now, type="delay_wake", pool=Pool.LEDGER.value, run_at=now)
    await add_job(db, now - timedelta(hours=1), type="task_timeout", pool=Pool.LEDGER.value)
    claimed = await ledger_of(db).jobs_claim(db, pool=Pool.LEDGER, limit=10, node_id="n", now=now)
    assert {job.id for job in claimed} >= {overdue, fresh}
    # both leases expire; a job becomes pending and overdue again
    clock.advance(seconds=300)
    late = await add_job(
        db,
        clock.now() - timedelta(minutes=10),
        type="delay_wake",
        pool=Pool.LEDGER.value,
        run_at=clock.now() - timedelta(minutes=3),
    )
    plan, run = await _preview_then_run(db, engine, "delay-wake")
    assert [(i.action, i.job_id) for i in plan.items] == [
        ("reclaim", overdue),
        ("reclaim", fresh),
        ("wake", late),
    ]
    assert run.totals()["done"] == 3
    rows = {r["id"]: r for r in await jobs_by_id(db, [overdue, fresh])}
    assert rows[overdue]["status"] == rows[fresh]["status"] == "pending"
    # minAgeMinutes counts from enqueue: the fresh one is too young
    flt = RecoveryFilter(min_age_minutes=30)
    await _set_job(db, overdue, status="dead")
    await _set_job(db, fresh, status="dead")
    young = await recovery_preview(db, "delay-wake", flt, now=clock.now())
    assert [(i.action, i.job_id) for i in young.items] == [("retry", overdue)]


# ----------------------------------------------------------------- subprocess


def _subprocess_defs() -> list[dict[str, Any]]:
    child = definition(
        "child",
        [START, {"key": "check", "type": "approval", "assignees": {"users": ["mia"]}}, END],
        [("start", "check"), ("check", "end")],
    )
    parent = definition(
        "parent",
        [
            START,
            {"key": "sub", "type": "subprocess", "definitionKey": "child"},
            {"key": "after", "type": "handle", "assignees": {"users": ["hal"]}},
            END,
        ],
        [("start", "sub"), ("sub", "after"), ("after", "end")],
    )
    return [child, parent]


async def test_subprocess_recreates_the_join_of_an_ended_child_O18(
    db: Database, clock: ManualClock
) -> None:
    engine = default_engine(db, clock)
    for source in _subprocess_defs():
        await engine.deploy(source, actor="admin")
    parent = await engine.start("parent", form={}, initiator="ann")
    stuck_child_parent = await engine.start("parent", form={}, initiator="ann")
    assert await run_due_jobs(db, clock) == 2  # the two spawns
    children = [
        c for c in await child_ids(db) if (await instance(db, c))["parent_instance_id"] == parent
    ]
    await engine.approve(await pending_task(db, children[0], "check"), actor="mia")
    join = (await jobs(db, parent, type="subprocess_join"))[0]
    await _delete_jobs(db, [join["id"]])  # the join job was lost

    plan, run = await _preview_then_run(db, engine, "subprocess")
    # the other parent's child still runs: nothing to do there
    assert [(i.action, i.job_type, i.instance_id) for i in plan.items] == [
        ("recreate", "subprocess_join", parent)
    ]
    assert plan.items[0].child_instance_id == children[0]
    assert run.totals()["done"] == 1
    async with running_worker(db, clock):

        async def joined() -> bool:
            return bool(await tasks(db, parent, status="pending", node_key="after"))

        await wait_until(joined, what="the parent to join")
    assert (await instance(db, stuck_child_parent))["status"] == "running"
    # a second run finds nothing: the join exists now
    again = await recovery_run(
        db,
        "subprocess",
        EVERYONE,
        now=clock.now(),
        snapshots=engine.snapshots,
        hooks=engine.hooks,
        actor="ops",
    )
    assert again.items == []


async def child_ids(db: Database) -> list[int]:
    from flowledger.db.engine_schema import workflow_instances

    async with db.read() as conn:
        rows = await conn.execute(
            select(workflow_instances.c.id).where(
                workflow_instances.c.parent_instance_id.is_not(None)
            )
        )
        return [int(i) for i in rows.scalars()]


# ------------------------------------------- external dispatch and trigger (L-17)


async def test_external_dispatch_recreates_a_never_dispatched_task_and_skips_unconfirmed_O18(
    db: Database, clock: ManualClock, outbound_env: Settings, receiver: Receiver
) -> None:
    engine = default_engine(db, clock)
    dispatch = {"kind": "http", "url": f"{receiver.url}/approvals"}
    nodes = [START, {"key": "partner", "type": "external_approval", "dispatch": dispatch}, END]
    await engine.deploy(
        definition("ext", nodes, [("start", "partner"), ("partner", "end")]), actor="admin"
    )
    never = await engine.start("ext", form={}, initiator="ann")
    unknown = await engine.start("ext", form={}, initiator="ann")
    await _delete_jobs(db, [(await jobs(db, never, type="external_dispatch"))[0]["id"]])
    receiver.reply = 500  # an unsafe POST answered 500: the outcome is unknown
    assert await run_due_jobs(db, clock) == 1
    unconfirmed = (await jobs(db, unknown, type="external_dispatch"))[0]
    assert unconfirmed["status"] == "dead"
    assert unconfirmed["last_error_code"] == "external_outcome_unconfirmed"
    receiver.reply = 200
    sent_before = len(receiver.requests)

    plan, run = await _preview_then_run(db, engine, "external-dispatch")
    assert sorted((i.action, i.instance_id) for i in plan.items) == sorted(
        [("needs_person", unknown), ("recreate", never)]
    )
    by_action = {r.item.action: r for r in run.items}
    assert by_action["needs_person"].outcome == "skipped"
    assert by_action["needs_person"].code == "needs_person"
    assert by_action["recreate"].outcome == "done"
    assert (await jobs_by_id(db, [unconfirmed["id"]]))[0]["status"] == "dead"  # not resent
    assert (await jobs_by_id(db, [unconfirmed["id"]]))[0]["generation"] == 1
    assert await run_due_jobs(db, clock) == 1  # only the recreated dispatch
    assert len(receiver.requests) == sent_before + 1
    recreated = (await jobs(db, never, type="external_dispatch"))[0]
    assert recreated["status"] == "succeeded"
    assert recreated["idempotency_key"] == f"external:{recreated['task_id']}"


async def test_trigger_dispatch_recreates_a_lost_dispatch_job_O18(
    db: Database, clock: ManualClock, outbound_env: Settings, receiver: Receiver
) -> None:
    engine = default_engine(db, clock)
    call = {"kind": "http", "url": f"{receiver.url}/orders", "httpMethod": "POST"}
    nodes = [
        START,
        {"key": "erp", "type": "trigger", "call": call},
        {"key": "after", "type": "handle", "assignees": {"users": ["hal"]}},
        END,
    ]
    await engine.deploy(
        definition("trig", nodes, [("start", "erp"), ("erp", "after"), ("after", "end")]),
        actor="admin",
    )
    iid = await engine.start("trig", form={}, initiator="ann")
    await _delete_jobs(db, [(await jobs(db, iid, type="trigger_dispatch"))[0]["id"]])
    plan, run = await _preview_then_run(db, engine, "trigger-dispatch")
    assert [(i.action, i.job_type, i.instance_id) for i in plan.items] == [
        ("recreate", "trigger_dispatch", iid)
    ]
    assert run.totals()["done"] == 1
    async with running_worker(db, clock):

        async def advanced() -> bool:
            return bool(await tasks(db, iid, status="pending", node_key="after"))

        await wait_until(advanced, what="the trigger to run and the instance to move on")
    assert [r.path for r in receiver.requests] == ["/orders"]


# --------------------------------------------------------- outbox and webhooks


async def test_event_dispatch_requeues_failed_outbox_rows_O18(
    db: Database, clock: ManualClock
) -> None:
    engine = default_engine(db, clock)
    await engine.deploy(_delay_def(), actor="admin")
    iid = await engine.start("nap", form={}, initiator="ann")
    async with db.begin() as conn:  # what the outbox relay does
        assert await ensure_dispatch_job(conn, now=clock.now(), ledger=ledger_of(conn)) is not None
    assert await run_due_jobs(db, clock) == 1  # the rows are dispatched
    async with db.begin() as conn:
        ids = list(
            (await conn.execute(select(outbox.c.id).where(outbox.c.instance_id == iid))).scalars()
        )
        await conn.execute(update(outbox).where(outbox.c.id == ids[0]).values(status="failed"))
    plan, run = await _preview_then_run(db, engine, "event-dispatch")
    assert [(i.action, i.target, i.outbox_id) for i in plan.items] == [
        ("recreate", "outbox", ids[0])
    ]
    assert run.totals()["done"] == 1
    assert await run_due_jobs(db, clock) == 1
    async with db.read() as conn:
        status = (
            await conn.execute(select(outbox.c.status).where(outbox.c.id == ids[0]))
        ).scalar_one()
    assert status == "dispatched"


@pytest.mark.parametrize("action", sorted(ACTIONS))
async def test_each_action_touches_only_its_types_O18(
    db: Database, clock: ManualClock, action: str
) -> None:
    engine = default_engine(db, clock)
    now = clock.now()
    every = sorted({t for types in ACTIONS.values() for t in types})
    attempts = []
    for job_type in every:
        pool = Pool.OUTBOUND.value if "dispatch" in job_type or "webhook" in job_type else None
        job_id = await add_job(
            db,
            now,
            type=job_type,
            pool=pool or Pool.LEDGER.value,
            status="dead",
            attempts=1,
            last_error="boom",
        )
        attempts.append(
            await add_execution(db, job_id, scheduled_at=now, started_at=now, status="failed")
        )
    plan, run = await _preview_then_run(db, engine, action)
    assert sorted(i.job_type for i in plan.items) == sorted(ACTIONS[action])
    assert all(i.action == "retry" for i in plan.items)
    assert run.totals()["done"] == len(ACTIONS[action])
    async with db.read() as conn:
        rows = (await conn.execute(select(workflow_jobs.c.type, workflow_jobs.c.status))).all()
    assert {t for t, s in rows if s == "pending"} == set(ACTIONS[action])
    async with db.read() as conn:  # a manual retry keeps every earlier attempt row
        kept = (await conn.execute(select(executions.c.id, executions.c.status))).all()
    assert sorted(kept) == sorted((a, "failed") for a in attempts)
    retried = await jobs_by_id(db, [i.job_id for i in plan.items])
    assert {(r["generation"], r["attempts"]) for r in retried} == {(2, 0)}


async def test_unknown_action_and_foreign_instance_are_not_found_O18(
    db: Database, clock: ManualClock
) -> None:
    engine = default_engine(db, clock)
    with pytest.raises(UnknownRecoveryAction) as caught:
        await recovery_preview(db, "everything", EVERYONE, now=clock.now())
    assert caught.value.field == "action"
    await engine.deploy(_delay_def(), actor="admin", tenant="acme")
    iid = await engine.start("nap", form={}, initiator="ann", tenant="acme")
    with pytest.raises(NotFoundError):
        await recovery_preview(
            db,
            "delay-wake",
            RecoveryFilter(instance_id=iid, tenants=("default",)),
            now=clock.now(),
        )
    with pytest.raises(FlowledgerError) as bad:
        await recovery_preview(db, "delay-wake", RecoveryFilter(limit=501), now=clock.now())
    assert bad.value.field == "limit"


async def test_two_runs_at_once_recreate_a_lost_job_once_O18(
    db: Database, clock: ManualClock
) -> None:
    """Two operators click run together: both plans list the lost wake job;
    the instance lock serializes the recreates and the second finds the
    first's job under the lock and skips."""
    engine = default_engine(db, clock)
    await engine.deploy(_delay_def(), actor="admin")
    iid = await engine.start("nap", form={}, initiator="ann")
    await _delete_jobs(db, [(await jobs(db, iid, type="delay_wake"))[0]["id"]])
    now = clock.now()
    runs = await asyncio.gather(
        *(
            recovery_run(
                db,
                "delay-wake",
                EVERYONE,
                now=now,
                snapshots=engine.snapshots,
                hooks=engine.hooks,
                actor=name,
            )
            for name in ("ops-a", "ops-b")
        )
    )
    outcomes = sorted(r.items[0].outcome for r in runs if r.items)
    assert outcomes in (["done", "skipped"], ["done"])
    assert len(await jobs(db, iid, type="delay_wake")) == 1


async def test_task_timeout_recreates_a_lost_timeout_job_O18(
    db: Database, clock: ManualClock
) -> None:
    engine = default_engine(db, clock)
    nodes = [
        START,
        {
            "key": "boss",
            "type": "approval",
            "assignees": {"users": ["mia"]},
            "timeout": {"after": "PT1H", "action": "auto_approve"},
        },
        {"key": "after", "type": "handle", "assignees": {"users": ["hal"]}},
        END,
    ]
    await engine.deploy(
        definition("slow", nodes, [("start", "boss"), ("boss", "after"), ("after", "end")]),
        actor="admin",
    )
    iid = await engine.start("slow", form={}, initiator="ann")
    await _delete_jobs(db, [(await jobs(db, iid, type="task_timeout"))[0]["id"]])
    plan, run = await _preview_then_run(db, engine, "task-timeout")
    assert [(i.action, i.job_type, i.instance_id) for i in plan.items] == [
        ("recreate", "task_timeout", iid)
    ]
    assert run.totals()["done"] == 1
    recreated = (await jobs(db, iid, type="task_timeout"))[0]
    assert recreated["run_at"] == (await tasks(db, iid, node_key="boss"))[0]["due_at"]
    clock.advance(seconds=3601)
    async with running_worker(db, clock):

        async def approved() -> bool:
            return bool(await tasks(db, iid, status="pending", node_key="after"))

        await wait_until(approved, what="the timeout to auto-approve")


async def test_subprocess_recreates_a_lost_spawn_and_outbox_gets_a_dispatch_job_O18(
    db: Database, clock: ManualClock
) -> None:
    engine = default_engine(db, clock)
    for source in _subprocess_defs():
        await engine.deploy(source, actor="admin")
    parent = await engine.start("parent", form={}, initiator="ann")
    await _delete_jobs(db, [(await jobs(db, parent, type="subprocess_spawn"))[0]["id"]])
    plan, run = await _preview_then_run(db, engine, "subprocess")
    assert [(i.action, i.job_type) for i in plan.items] == [("recreate", "subprocess_spawn")]
    assert await run_due_jobs(db, clock) == 1
    assert await child_ids(db)  # the child was started by the recreated spawn

    # pending outbox rows and no dispatch job at all: one job covers them all
    events, run = await _preview_then_run(db, engine, "event-dispatch")
    assert events.items and {i.status for i in events.items} == {"pending"}
    created = {r.job_id for r in run.items}
    assert len(created) == 1 and run.submitted == 1
    assert await run_due_jobs(db, clock) >= 1
    async with db.read() as conn:
        left = (await conn.execute(select(outbox.c.id).where(outbox.c.status == "pending"))).all()
    assert left == []
