"""The worker registry, heartbeats and the drain leader (SPEC L-21, L-20, L-6).

Covers: a worker registers a node whose id contains its pid, with its roles,
pools and slot capacity (4 + 4 by default, configurable) (L-21, L-6);
``heartbeat.run_once`` records the clock time and the slots in use while a
handler runs (L-21); two drains on one database — only the first to run
leads until its lease (twice the interval) passes, then the other takes over
(L-20); a job left running by a dead worker is reclaimed by a live worker's
drain after its lease expires and executed again after the backoff (L-20,
L-5).
"""

from __future__ import annotations

import os
import socket
from datetime import timedelta

import pytest
from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import system_leader_leases as leases
from flowledger.worker.services import DRAIN_TASK, Drain
from tests.integration.ledger_helpers import attempt_rows, claim_one, job_row
from tests.integration.worker_helpers import (
    LEDGER,
    OUTBOUND,
    Gate,
    add_scripted,
    is_idle,
    node_row,
    running_worker,
    wait_job,
    wait_started,
    wait_until,
)


async def test_worker_registers_its_node_L21(db: Database, clock: ManualClock) -> None:
    start = clock.now()
    async with running_worker(db, clock) as run:
        node_id = run.worker.node.id
        node = await node_row(db, node_id)
    assert f":{os.getpid()}:" in node_id
    assert (node.pid, node.hostname, node.roles) == (os.getpid(), socket.gethostname(), ["worker"])
    assert node.pools == {LEDGER: 4, OUTBOUND: 4}
    assert (node.slots_capacity, node.slots_in_use) == (8, 0)
    assert (node.status, node.started_at, node.heartbeat_at) == ("active", start, start)


async def test_slot_capacity_follows_the_pool_config_L6_L21(
    db: Database, clock: ManualClock
) -> None:
    async with running_worker(db, clock, pools={LEDGER: 2, OUTBOUND: 3}) as run:
        node = await node_row(db, run.worker.node.id)
    assert (node.pools, node.slots_capacity) == ({LEDGER: 2, OUTBOUND: 3}, 5)


async def test_heartbeat_reports_slots_in_use_L21(db: Database, clock: ManualClock) -> None:
    gates = [Gate(), Gate()]
    async with running_worker(db, clock) as run:
        ids = [await add_scripted(db, clock, gate) for gate in gates]
        for gate in gates:
            await wait_started(gate)
        beat = clock.advance(seconds=15)
        await run.worker.heartbeat.run_once()
        node = await node_row(db, run.worker.node.id)
        assert (node.slots_in_use, node.heartbeat_at, node.status) == (2, beat, "active")
        gates[0].release.set()
        await wait_job(db, ids[0], "succeeded")
        await wait_until(lambda: run.worker.slots_in_use() == 1, what="one slot to free")
        beat = clock.advance(seconds=15)
        await run.worker.heartbeat.run_once()
        node = await node_row(db, run.worker.node.id)
        assert (node.slots_in_use, node.heartbeat_at) == (1, beat)
        gates[1].release.set()
        await wait_job(db, ids[1], "succeeded")
        await wait_until(lambda: is_idle(run.worker), what="the worker to be idle")
        await run.worker.heartbeat.run_once()
        assert (await node_row(db, run.worker.node.id)).slots_in_use == 0


async def leader(db: Database) -> tuple[str, object]:
    async with db.read() as conn:
        row = (await conn.execute(select(leases).where(leases.c.name == DRAIN_TASK))).one()
    return row.holder, row.lease_until


@pytest.mark.parametrize("first", ["a", "b"])
async def test_one_drain_leads_until_its_lease_passes_L20(
    first: str, db: Database, clock: ManualClock
) -> None:
    drains = {name: Drain(db, clock, f"node-{name}", interval_s=60) for name in "ab"}
    leader_drain, other = drains[first], drains["b" if first == "a" else "a"]
    await leader_drain.run_once()
    assert leader_drain.last_report is not None
    assert await leader(db) == (leader_drain.node_id, clock.now() + timedelta(seconds=120))
    # a job left running by a dead executor: only the leader reclaims it
    job_id = await add_scripted(db, clock, Gate())
    await claim_one(db, clock.now(), node="ghost")
    clock.advance(seconds=61)  # lease expired; the leader's lease (120 s) holds
    await other.run_once()
    assert other.last_report is None
    assert (await job_row(db, job_id)).status == "running"
    await leader_drain.run_once()  # renews its leadership and reclaims
    assert leader_drain.last_report.retried == [job_id]  # type: ignore[union-attr]
    renewed_until = clock.now() + timedelta(seconds=120)
    assert await leader(db) == (leader_drain.node_id, renewed_until)
    clock.advance(seconds=120)  # lease_until == now: not passed yet
    await other.run_once()
    assert other.last_report is None
    clock.advance(ms=1)  # the leader stopped renewing: the other takes over
    await other.run_once()
    assert other.last_report is not None
    assert await leader(db) == (other.node_id, clock.now() + timedelta(seconds=120))
    leader_drain.last_report = None
    await leader_drain.run_once()
    assert leader_drain.last_report is None


async def test_live_worker_reclaims_and_reruns_a_dead_workers_job_L20(
    db: Database, clock: ManualClock
) -> None:
    gate = Gate(result={"rerun": True})
    gate.release.set()
    job_id = await add_scripted(db, clock, gate)
    ghost = await claim_one(db, clock.now(), node="dead-worker")
    async with running_worker(db, clock) as run:
        reclaimed_at = clock.advance(seconds=61)
        await run.worker.drain.run_once()
        row = await job_row(db, job_id)
        assert (row.status, row.last_error_code) == ("pending", "lease_expired")
        assert row.run_at == reclaimed_at + timedelta(seconds=30)
        clock.advance(seconds=30)
        run.worker.db.hub.signal(None)
        row = await wait_job(db, job_id, "succeeded")
    assert (row.attempts, row.result, gate.calls) == (2, {"rerun": True}, 1)
    first, second = await attempt_rows(db, job_id)
    assert (first.id, first.node_id, first.status, first.error_code) == (
        ghost.execution_id, "dead-worker", "failed", "lease_expired",
    )  # fmt: skip
    assert (second.node_id, second.status) == (run.worker.node.id, "succeeded")
