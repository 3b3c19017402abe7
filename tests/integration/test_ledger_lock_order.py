"""Multi-row writers of ``workflow_jobs`` never deadlock each other
(SPEC L-9, L-10; issue 15: the lease renewer died with ``DeadlockDetected``
while the settler wrote the same rows in another order).

PostgreSQL only (SQLite has one writer at a time, so no row locks to order).
A third transaction holds the lock of one job in the middle of a batch; lease
renewal over the jobs in ascending order and a batch settlement over the same
jobs in descending order start against it, each through the real driver
method; then the lock is let go. Before the fix each statement had locked the
rows on its side of the held one and waited for the rows the other held:
PostgreSQL broke the cycle by killing one of them. Now each locks rows in id
order (the renewer skips rows locked by someone else and reports them still
owned when their fence still matches), so both finish, and fencing stays
exact: the renewal reports every job still owned (none had settled when it
ran) and the settlement settles every job, each attempt finished once.
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import select, text

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.driver import CoreLedger, LedgerDriver, PostgresFastLedger, PostgresLedger
from flowledger.ledger.models import Outcome
from tests.integration.ledger_helpers import add_job, attempt_rows, claim, job_row
from tests.ledger_access import ledger_of

N_JOBS = 40
LEASE_MS = 60_000


async def _waiting_on_locks(db: Database) -> int:
    async with db.read() as conn:
        query = text(
            "SELECT count(*) FROM pg_stat_activity "
            "WHERE datname = current_database() AND wait_event_type = 'Lock'"
        )
        return int((await conn.execute(query)).scalar_one())


def _settle_driver(kind: str, db: Database) -> LedgerDriver:
    if kind == "core":
        return CoreLedger()
    if kind == "postgresql":
        return PostgresLedger()
    hot = db.hot_path()
    assert hot is not None
    return PostgresFastLedger(hot)


@pytest.mark.parametrize("backend", ["postgresql"])  # PostgreSQL-only property
@pytest.mark.parametrize("settle_kind", ["core", "postgresql", "postgresql-fast"])
async def test_renewal_and_settlement_in_opposite_orders_do_not_deadlock_L9_L10(
    db: Database, clock: ManualClock, settle_kind: str
) -> None:
    for _ in range(N_JOBS):
        await add_job(db, clock.now())
    claimed = sorted(await claim(db, clock.now(), limit=N_JOBS), key=lambda j: j.id)
    assert len(claimed) == N_JOBS
    middle = claimed[N_JOBS // 2].id
    clock.advance(seconds=5)
    settler = _settle_driver(settle_kind, db)
    try:
        async with db.engine.connect() as blocker:
            trans = await blocker.begin()
            await blocker.execute(select(jobs.c.id).where(jobs.c.id == middle).with_for_update())
            renewal = asyncio.ensure_future(
                ledger_of(db).jobs_renew_leases(db, claimed, now=clock.now(), lease_ms=LEASE_MS)
            )
            settlement = asyncio.ensure_future(
                settler.jobs_settle(
                    db,
                    [(job, Outcome.success({"n": job.id})) for job in reversed(claimed)],
                    now=clock.now(),
                )
            )
            # let both statements lock what they can and queue behind the held row
            for _ in range(200):
                waiting = await _waiting_on_locks(db)
                if waiting >= 2 or (renewal.done() and waiting >= 1):
                    break
                await asyncio.sleep(0.01)
            await asyncio.sleep(0.05)
            await trans.rollback()
        renewed, settled = await asyncio.gather(renewal, settlement)
    finally:
        await settler.close()
    ids = {job.id for job in claimed}
    assert renewed == ids  # none had settled yet: every lease is still this executor's
    assert settled == ids
    for job in claimed:
        row = await job_row(db, job.id)
        assert (row.status, row.lease_token, row.result) == ("succeeded", None, {"n": job.id})
        (attempt,) = await attempt_rows(db, job.id)
        assert attempt.status == "succeeded"
        assert attempt.finished_at == clock.now()
    # the stale fences can neither renew nor settle again
    later = clock.now() + timedelta(seconds=1)
    assert await ledger_of(db).jobs_renew_leases(db, claimed, now=later, lease_ms=LEASE_MS) == set()
