"""Paused scopes against real worker loops (issue 31 item 3), both backends:
a paused job type's jobs are not claimed by a running worker while another
type of the same pool is; on resume the wake hint gets the job claimed at
once (the worker polls only every 30 s); the pause is in the database, so
it holds across a worker restart and for two workers at once; resuming
lets exactly one of them run the job, once."""

from __future__ import annotations

import asyncio
from typing import Any

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ledger.models import JobSpec
from flowledger.ledger.pauses import pause_scope, resume_scope
from flowledger.worker.context import JobContext
from tests.integration.ledger_helpers import attempt_rows, job_row
from tests.integration.worker_helpers import (
    SCRIPTED,
    add_scripted,
    running_worker,
    start_worker,
    wait_job,
    wait_until,
)
from tests.ledger_access import ledger_of
from tests.runtime_support import TEST_HANDLERS


async def _other(ctx: JobContext) -> Any:
    return {"ran": ctx.job.type}


OTHER = TEST_HANDLERS.register("it_pause_other", _other).job_type


async def _done(ctx: JobContext) -> Any:
    return {"ran": "scripted"}


async def _pause(db: Database, clock: ManualClock) -> None:
    async with db.begin() as conn:
        await pause_scope(
            conn, "job_type", SCRIPTED.name, by="ops", reason="vendor down", now=clock.now()
        )


async def _resume(db: Database) -> None:
    async with db.begin() as conn:
        await resume_scope(conn, "job_type", SCRIPTED.name)


async def _still_pending(db: Database, job_id: int, run_at: Any) -> None:
    row = await job_row(db, job_id)
    assert (row.status, row.run_at, row.attempts) == ("pending", run_at, 0)
    assert await attempt_rows(db, job_id) == []


async def test_a_paused_type_waits_while_others_run_and_resume_wakes_it(
    db: Database, clock: ManualClock
) -> None:
    async with running_worker(db, clock, poll_interval_s=30.0) as run:
        (ledger_pool, _outbound) = run.worker.pools
        await wait_until(lambda: ledger_pool.claims >= 1, what="the first claim")
        await _pause(db, clock)
        paused = await add_scripted(db, clock, _done)
        run_at = (await job_row(db, paused)).run_at
        async with db.begin() as conn:
            other = (await ledger_of(conn).job_insert(conn, JobSpec(OTHER), now=clock.now())).job_id
        assert (await wait_job(db, other, "succeeded", within=5.0)).result == {
            "ran": "it_pause_other"
        }
        claims = ledger_pool.claims
        await asyncio.sleep(0.5)
        await _still_pending(db, paused, run_at)
        await _resume(db)
        # the poll is 30 s away: only the resume's wake hint can claim it now
        row = await wait_job(db, paused, "succeeded", within=3.0)
        assert row.result == {"ran": "scripted"} and row.run_at == run_at
        assert ledger_pool.claims > claims


async def test_the_pause_holds_across_a_restart_and_for_two_workers(
    db: Database, clock: ManualClock
) -> None:
    await _pause(db, clock)
    paused = await add_scripted(db, clock, _done)
    run_at = (await job_row(db, paused)).run_at
    first = await start_worker(db, clock)
    try:
        pool = first.worker.pools[0]
        await wait_until(lambda: pool.claims >= 5, what="five claims")
        await _still_pending(db, paused, run_at)
    finally:
        await first.shutdown()
    # a fresh pair of workers: the pause is read from the database by every claim
    pair = [await start_worker(db, clock), await start_worker(db, clock)]
    try:
        for running in pair:
            pool = running.worker.pools[0]
            await wait_until(lambda p=pool: p.claims >= 5, what="five claims each")  # type: ignore[misc]
        await _still_pending(db, paused, run_at)
        await _resume(db)
        await wait_job(db, paused, "succeeded", within=5.0)
        attempts = await attempt_rows(db, paused)
        assert len(attempts) == 1  # one worker took it, once
    finally:
        for running in pair:
            await running.shutdown()
