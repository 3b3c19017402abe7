"""Issue 17 item 11 (SPEC L-20, L-14): the drain's "this attempt already
committed its receipt, replay at once" check is correlated with the job being
rescued. Other jobs' attempts starting after the receipt (a busy system) must
not hide it: the job is replayed at once, and one on its last attempt is not
dead-lettered although its work is done."""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.receipts import run_step
from tests.integration.ledger_helpers import add_job, claim, claim_one, job_row, rescue


async def _noop(conn: AsyncConnection) -> Any:
    return {"done": True}


async def test_committed_receipt_replays_at_once_despite_later_attempts_of_other_jobs_L20(
    db: Database, clock: ManualClock
) -> None:
    last_try = await add_job(db, clock.now(), max_attempts=1)
    busy = await add_job(db, clock.now(), max_attempts=1)
    other = await add_job(db, clock.now())
    (job,) = await claim(db, clock.now(), limit=1)
    assert job.id == last_try
    await run_step(db, ledger_driver(db), job.fence, job.operation_key, "s1", _noop, now=clock.now)
    # the executor dies before settling; meanwhile other jobs start attempts
    clock.advance(seconds=5)
    started = {j.id for j in await claim(db, clock.now(), limit=2)}
    assert started == {busy, other}
    clock.advance(seconds=61)  # every lease expired
    report = await rescue(db, clock.now())
    assert last_try in report.retried, report
    row = await job_row(db, last_try)
    assert (row.status, row.run_at) == ("pending", clock.now())
    # the others had no receipt: the one on its last attempt is dead, the other backs off
    assert busy in report.dead
    assert (await job_row(db, other)).run_at > clock.now()
    # the replay is claimable now and finds its receipt
    again = await claim_one(db, clock.now())
    assert again.id == last_try
