"""Enqueueing through the runtime (issue 28 item 4: one name per operation,
the driver chosen once) and the deprecated module-level spellings of
``flowledger.worker`` kept for one release (docs/embedding.md, L-1, L-15)."""

from __future__ import annotations

import pytest
from sqlalchemy import func, select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.models import JobSpec
from flowledger.runtime import build_runtime
from flowledger.states import Pool
from flowledger.worker import JobType, enqueue, enqueue_bulk

NOOP = JobType("spelling_noop", Pool.LEDGER.value)


async def _count(db: Database) -> int:
    async with db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(jobs))).scalar_one())


async def test_enqueue_in_writes_in_the_callers_transaction_L1_L15(
    db: Database, clock: ManualClock
) -> None:
    runtime = build_runtime(db=db, clock=clock)
    async with db.begin() as conn:
        first = await runtime.enqueue_in(conn, JobSpec(NOOP, idempotency_key="k-1"))
        again, other = await runtime.enqueue_in(
            conn, JobSpec(NOOP, idempotency_key="k-1"), JobSpec(NOOP)
        )
    assert first[0].created and not again.created and again.job_id == first[0].job_id
    assert other.created and await _count(db) == 2
    with pytest.raises(RuntimeError):
        async with db.begin() as conn:
            await runtime.enqueue_in(conn, JobSpec(NOOP))
            raise RuntimeError("roll back")
    assert await _count(db) == 2  # nothing of a rolled-back transaction


async def test_the_old_spellings_still_enqueue_with_a_deprecation_warning_L1(
    db: Database, clock: ManualClock
) -> None:
    async with db.begin() as conn:
        with pytest.warns(DeprecationWarning, match=r"flowledger\.worker\.enqueue is deprecated"):
            one = await enqueue(conn, JobSpec(NOOP), now=clock.now())
        with pytest.warns(DeprecationWarning, match="enqueue_bulk is deprecated"):
            two = await enqueue_bulk(conn, [JobSpec(NOOP), JobSpec(NOOP)], now=clock.now())
    assert one.created and [r.created for r in two] == [True, True]
    assert await _count(db) == 3
