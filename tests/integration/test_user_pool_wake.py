"""Wake hints reach a user-defined pool (issue 15 item 5; SPEC L-8), on both
backends and through both channels of ``test_worker_wake.py``: a worker
running only the user pool ``it-wake-pool``, polling every 30 s, executes a
job enqueued into that pool within 2 s after its first claim — the hint
carries the pool's name (the NOTIFY payload on PostgreSQL, the in-process
hub's key on SQLite) — and a job of a built-in pool, which this worker does
not run, stays pending."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ledger.models import JobSpec
from flowledger.worker.context import JobContext
from tests.integration.ledger_helpers import job_row
from tests.integration.worker_helpers import (
    SCRIPTED,
    behave,
    running_worker,
    wait_job,
    wait_until,
)
from tests.ledger_access import ledger_of
from tests.runtime_support import TEST_HANDLERS

POOL = "it-wake-pool"


async def _woken(ctx: JobContext) -> Any:
    return {"pool": ctx.job.pool}


TEST_HANDLERS.job_types.declare_pools([POOL])  # as FLOWLEDGER_POOLS would, before registering
USER_JOB = TEST_HANDLERS.register("it_user_pool_job", _woken, pool=POOL).job_type


async def _enqueue(db: Database, clock: ManualClock, spec: JobSpec) -> int:
    async with db.begin() as conn:
        return (await ledger_of(conn).job_insert(conn, spec, now=clock.now())).job_id


@pytest.mark.parametrize("channel", ["in_process", "cross_process"])
async def test_a_hint_wakes_a_user_pool(
    channel: str, db: Database, db_url: str, clock: ManualClock
) -> None:
    other = Database(db_url)
    try:
        async with running_worker(
            db,
            clock,
            pools={POOL: 1},
            poll_interval_s=30.0,
            run_drain=False,
            listen=channel == "cross_process",
        ) as run:
            (pool,) = run.worker.pools
            await wait_until(lambda: pool.claims >= 1, what="the first claim")
            if channel == "cross_process":
                await asyncio.sleep(1.0)  # the LISTEN connection / watcher is up
            source = db if channel == "in_process" else other
            builtin = await _enqueue(source, clock, JobSpec(SCRIPTED, payload=behave(_woken)))
            job_id = await _enqueue(source, clock, JobSpec(USER_JOB))
            row = await wait_job(db, job_id, "succeeded", within=2.0)
            assert (row.pool, row.result) == (POOL, {"pool": POOL})
            assert (await job_row(db, builtin)).status == "pending"  # no worker runs its pool
    finally:
        await other.dispose()
