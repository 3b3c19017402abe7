"""Leader handover between real worker processes on PostgreSQL (SPEC L-20,
L-6; issue 16 item 4).

Two ``flowledger worker`` processes share one database with a 2 s drain
interval (so the drain's lease lives 4 s). The test waits until one of them,
A, leads the drain and has *just* extended its lease, then stops A with
SIGTERM: A exits 0 having released every lease it held (its leader elector
resigns on shutdown), and worker B runs the drain — its ``system_task_runs``
row names B — within one drain interval (plus its ±10 % jitter) of A's exit.
Without the resignation A's fresh lease would block B for about 4 s, twice
the bound.
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from flowledger.db.database import Database
from flowledger.db.migrate import upgrade
from flowledger.worker.services import DRAIN_TASK
from tests.dbutil import pg_database
from tests.e2e.test_worker_processes import Workers, process_env, rows, scalar

DRAIN_S = 2.0
BOUND_S = DRAIN_S * 1.1 + 0.5  # one interval, its jitter, and the polling below


@pytest.fixture
def pg_db_url() -> Iterator[str]:
    with pg_database() as url:
        yield url


async def eventually(probe: Any, *, within: float, workers: Workers, what: str) -> Any:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while True:
        value = await probe()
        if value:
            return value
        workers.check_alive()
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{workers.logs()}")
        await asyncio.sleep(0.05)


async def node_of(db: Database, pid: int) -> str | None:
    found = await rows(db, "SELECT id FROM system_scheduler_nodes WHERE pid = :pid", pid=pid)
    return str(found[0].id) if found else None


async def drain_lease(db: Database) -> Any:
    found = await rows(
        db,
        "SELECT holder, lease_until FROM system_leader_leases WHERE name = :name",
        name=DRAIN_TASK,
    )
    return found[0] if found else None


async def test_a_stopped_leader_resigns_and_the_next_worker_drains_within_an_interval_L20(
    pg_db_url: str, tmp_path: Path
) -> None:
    env = process_env(pg_db_url)
    env["FLOWLEDGER_DRAIN_INTERVAL_S"] = str(DRAIN_S)
    db = Database(pg_db_url)
    await upgrade(db)
    workers = Workers(env, tmp_path)
    try:
        started = [workers.start(), workers.start()]

        async def both_nodes() -> list[str] | None:
            ids = [await node_of(db, w.proc.pid) for w in started]
            return None if None in ids else [str(i) for i in ids]

        ids = await eventually(both_nodes, within=30, workers=workers, what="both nodes")

        async def leader() -> str | None:
            lease = await drain_lease(db)
            return None if lease is None else str(lease.holder)

        a_id = await eventually(leader, within=10, workers=workers, what="a drain leader")
        a = started[ids.index(a_id)]
        b_id = next(i for i in ids if i != a_id)

        # stop A right after it extended its lease: the lease is as fresh as it gets
        renewed_from = (await drain_lease(db)).lease_until

        async def a_renewed() -> bool:
            lease = await drain_lease(db)
            return lease.holder == a_id and lease.lease_until > renewed_from

        await eventually(a_renewed, within=5, workers=workers, what="A renewing its lease")
        a.proc.send_signal(signal.SIGTERM)
        assert await asyncio.to_thread(a.proc.wait, 20) == 0, a.tail()
        loop = asyncio.get_running_loop()
        exited = loop.time()
        workers.all.remove(a)  # stopped on purpose: no longer checked for being alive
        a.log.close()
        held_by_a = await scalar(
            db, "SELECT count(*) FROM system_leader_leases WHERE holder = :h", h=a_id
        )
        assert held_by_a == 0, await rows(db, "SELECT * FROM system_leader_leases")

        async def b_drained() -> bool:
            runs = await rows(
                db, "SELECT node_id FROM system_task_runs WHERE name = :n", n=DRAIN_TASK
            )
            return bool(runs) and runs[0].node_id == b_id

        await eventually(b_drained, within=10, workers=workers, what="B running the drain")
        took = loop.time() - exited
        assert took <= BOUND_S, f"B took {took:.2f} s to take over the drain\n{workers.logs()}"
        assert (await drain_lease(db)).holder == b_id
        status = await scalar(
            db, "SELECT status FROM system_scheduler_nodes WHERE id = :id", id=a_id
        )
        assert status == "stopped"
    finally:
        workers.terminate_all()
        await db.dispose()
