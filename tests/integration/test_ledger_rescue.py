"""The drain, wake hints and the leader lease (SPEC L-20, L-8, L-5, L-17).

Covers: the drain reclaims a running job whose lease expired (back to pending
with backoff, attempt ``lease_expired``), whose execution deadline passed
(``deadline_exceeded``), or whose attempts are exhausted (dead) (L-20, L-5);
it republishes hints only for pools with due pending jobs (L-20); wake hints
are published only after commit — in-process hub on SQLite, LISTEN/NOTIFY on
PostgreSQL (L-8); the leader lease that makes the drain run once per cluster.
"""

from __future__ import annotations

import asyncio
from contextlib import nullcontext
from datetime import timedelta

import psycopg
import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.wake import WAKE_CHANNEL
from flowledger.ledger.models import JobSpec
from tests.integration.ledger_helpers import (
    LEDGER,
    OUT_TYPE,
    OUTBOUND,
    TEST_TYPE,
    add_job,
    attempt_rows,
    claim,
    claim_one,
    job_row,
    rescue,
)
from tests.ledger_access import ledger_of


async def test_drain_reclaims_expired_lease_with_backoff_L20(
    db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    clock.advance(seconds=60)  # lease_until == now: not yet expired
    assert (await rescue(db, clock.now())).retried == []
    now = clock.advance(ms=1)
    report = await rescue(db, now)
    assert (report.retried, report.dead) == ([job_id], [])
    row = await job_row(db, job_id)
    assert (row.status, row.attempts, row.generation) == ("pending", 1, 1)
    assert (row.lease_token, row.lease_until, row.lease_owner) == (None, None, None)
    assert row.last_error_code == "lease_expired"
    assert row.run_at == now + timedelta(seconds=30)
    (attempt,) = await attempt_rows(db, job_id)
    assert attempt.id == job.execution_id
    assert (attempt.status, attempt.error_code, attempt.finished_at) == (
        "failed", "lease_expired", now,
    )  # fmt: skip
    # the second reclaim backs off 60 s
    clock.advance(seconds=30)
    await claim_one(db, clock.now())
    now = clock.advance(seconds=61)
    assert (await rescue(db, now)).retried == [job_id]
    assert (await job_row(db, job_id)).run_at == now + timedelta(seconds=60)


async def test_drain_reclaims_past_deadline_L20_L11(db: Database, clock: ManualClock) -> None:
    job_id = await add_job(db, clock.now(), execution_timeout_ms=120_000)
    job = await claim_one(db, clock.now())
    for _ in range(2):  # the executor keeps renewing, but the handler hangs
        clock.advance(seconds=40)
        assert await ledger_of(db).jobs_renew_leases(
            db, [job], now=clock.now(), lease_ms=60_000
        ) == {job_id}
    assert (await job_row(db, job_id)).lease_until == job.execution_deadline
    assert (await rescue(db, clock.advance(seconds=39))).retried == []
    clock.advance(seconds=1)  # now == deadline == lease_until: the lease itself is not expired
    assert (
        await ledger_of(db).jobs_renew_leases(db, [job], now=clock.now(), lease_ms=60_000) == set()
    )
    assert (await rescue(db, clock.now())).retried == [job_id]
    row = await job_row(db, job_id)
    assert (row.status, row.last_error_code) == ("pending", "deadline_exceeded")
    assert row.run_at == clock.now() + timedelta(seconds=30)
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.error_code) == ("failed", "deadline_exceeded")


async def test_drain_dead_letters_exhausted_attempts_L20_L5(
    db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now(), max_attempts=2)
    first = await claim_one(db, clock.now())
    report = await rescue(db, clock.advance(seconds=61))
    assert (report.retried, report.dead) == ([job_id], [])
    assert (await job_row(db, job_id)).status == "pending"
    clock.advance(seconds=30)
    job = await claim_one(db, clock.now())
    report = await rescue(db, clock.advance(seconds=61))
    assert (report.retried, report.dead) == ([], [job_id])
    assert (first.attempt, job.attempt) == (1, 2)
    row = await job_row(db, job_id)
    assert (row.status, row.attempts, row.last_error_code) == ("dead", 2, "attempts_exhausted")
    attempts = await attempt_rows(db, job_id)
    assert [(a.status, a.error_code) for a in attempts] == [("failed", "lease_expired")] * 2
    assert await claim(db, clock.advance(seconds=3_600)) == []


async def test_drain_leaves_healthy_and_finished_jobs_alone_L20(
    db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    await claim_one(db, clock.now())
    future = await add_job(db, clock.now(), delay_ms=600_000)
    before = (await job_row(db, job_id), await job_row(db, future))
    report = await rescue(db, clock.advance(seconds=59))
    assert (report.retried, report.dead, report.hinted_pools) == ([], [], [])
    assert (await job_row(db, job_id), await job_row(db, future)) == before


async def test_drain_hints_only_pools_with_due_pending_jobs_L20(
    db: Database, clock: ManualClock
) -> None:
    await add_job(db, clock.now(), delay_ms=1_000)  # ledger pool: due after 1 s
    await add_job(db, clock.now(), type=OUT_TYPE.name, delay_ms=60_000)  # outbound: future
    assert (await rescue(db, clock.now())).hinted_pools == []
    assert (await rescue(db, clock.advance(seconds=1))).hinted_pools == [LEDGER]
    assert (await rescue(db, clock.advance(seconds=59))).hinted_pools == [LEDGER, OUTBOUND]
    # running jobs are not "due pending" work
    await claim(db, clock.now(), pool=LEDGER)
    assert (await rescue(db, clock.now())).hinted_pools == [OUTBOUND]


async def test_drain_hint_reaches_subscribers_L20_L8(db: Database, clock: ManualClock) -> None:
    await add_job(db, clock.now())
    event = db.hub.subscribe(LEDGER)
    other = db.hub.subscribe(OUTBOUND)
    await rescue(db, clock.now())
    assert event.is_set()
    assert not other.is_set()


# ------------------------------------------------------------- wake hints L-8


async def _enqueue(db: Database, clock: ManualClock, *, commit: bool) -> None:
    with pytest.raises(RuntimeError) if not commit else nullcontext():
        async with db.begin() as conn:
            await ledger_of(conn).job_insert(conn, JobSpec(type=TEST_TYPE), now=clock.now())
            if not commit:
                raise RuntimeError("business check failed")


async def test_wake_hub_signals_only_after_commit_L8(db: Database, clock: ManualClock) -> None:
    ledger = db.hub.subscribe(LEDGER)
    outbound = db.hub.subscribe(OUTBOUND)
    await _enqueue(db, clock, commit=False)
    assert not ledger.is_set()
    await _enqueue(db, clock, commit=True)
    assert ledger.is_set()
    assert not outbound.is_set()
    assert len(await claim(db, clock.now())) == 1  # the rolled-back job does not exist


@pytest.mark.parametrize("backend", ["postgresql"])  # PostgreSQL-only property
async def test_postgres_notify_only_after_commit_L8(
    backend: str, db: Database, db_url: str, clock: ManualClock
) -> None:
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as listener:
        await listener.execute(f"LISTEN {WAKE_CHANNEL}")
        await _enqueue(db, clock, commit=False)
        # the one real wait of the suite: nothing must arrive for a rolled-back enqueue
        missed = [n async for n in listener.notifies(timeout=0.5)]
        assert missed == []
        await _enqueue(db, clock, commit=True)
        received = [n async for n in listener.notifies(timeout=5.0, stop_after=1)]
        assert [(n.channel, n.payload) for n in received] == [(WAKE_CHANNEL, LEDGER)]


@pytest.mark.parametrize("backend", ["postgresql"])  # PostgreSQL-only property
async def test_postgres_notify_is_coalesced_per_transaction_L8(
    backend: str, db: Database, db_url: str, clock: ManualClock
) -> None:
    async with await psycopg.AsyncConnection.connect(db_url, autocommit=True) as listener:
        await listener.execute(f"LISTEN {WAKE_CHANNEL}")
        async with db.begin() as conn:
            for spec_type in (TEST_TYPE, TEST_TYPE, OUT_TYPE):
                await ledger_of(conn).job_insert(conn, JobSpec(type=spec_type), now=clock.now())
        received = [n async for n in listener.notifies(timeout=5.0, stop_after=2)]
        assert sorted(n.payload for n in received) == [LEDGER, OUTBOUND]
        # a marker notification proves nothing else was queued before it
        await listener.execute("SELECT pg_notify(%s, 'marker')", (WAKE_CHANNEL,))
        rest = [n async for n in listener.notifies(timeout=5.0, stop_after=1)]
        assert [n.payload for n in rest] == ["marker"]


# ------------------------------------------------------------- leader lease


async def _acquire(db: Database, holder: str, clock: ManualClock) -> bool:
    async with db.begin() as conn:
        return await ledger_of(conn).leader_acquire(
            conn, "workflow-jobs-drain", holder, now=clock.now(), ttl=timedelta(seconds=30)
        )


async def test_leader_lease_has_one_holder_until_ttl_passes_L20(
    db: Database, clock: ManualClock
) -> None:
    assert await _acquire(db, "node-a", clock) is True
    assert await _acquire(db, "node-b", clock) is False
    clock.advance(seconds=20)
    assert await _acquire(db, "node-a", clock) is True  # renews to t+50
    clock.advance(seconds=29)
    assert await _acquire(db, "node-b", clock) is False
    clock.advance(seconds=2)  # t+51: node-a's lease lapsed
    assert await _acquire(db, "node-b", clock) is True
    assert await _acquire(db, "node-a", clock) is False
    async with db.begin() as conn:
        await ledger_of(conn).leader_release(
            conn, "workflow-jobs-drain", "node-a"
        )  # not the holder: no-op
    assert await _acquire(db, "node-a", clock) is False
    async with db.begin() as conn:
        await ledger_of(conn).leader_release(conn, "workflow-jobs-drain", "node-b")
    assert await _acquire(db, "node-a", clock) is True


async def test_leader_acquire_race_has_one_winner_L20(db: Database, clock: ManualClock) -> None:
    results = await asyncio.gather(*(_acquire(db, f"node-{i}", clock) for i in range(5)))
    assert sorted(results) == [False, False, False, False, True]
