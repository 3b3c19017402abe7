"""Ownership fencing (SPEC L-9, L-10, L-11, L-13, L-17, L-20).

Covers: lease renewal keeps a job alive past its original 60 s lease (L-10);
renewal never extends past the execution deadline and a renewal after the
deadline reports the job lost (L-11); a stale executor cannot renew (L-9);
``job_lock_fenced`` raises LeaseLostError for stale fences and after the
deadline (L-13); a side-effect marker followed by lease expiry makes the
drain dead-letter the job as ``external_outcome_unconfirmed`` (L-17, L-20).
"""

from __future__ import annotations

from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.errors import LeaseLostError
from flowledger.ledger.models import ClaimedJob, Fence, Outcome
from flowledger.worker.context import JobContext
from tests.integration.ledger_helpers import (
    add_job,
    attempt_rows,
    claim,
    claim_one,
    job_row,
    rescue,
    settle_single,
)
from tests.ledger_access import ledger_of

LEASE_MS = 60_000


async def _renew(db: Database, jobs: list[ClaimedJob], clock: ManualClock) -> set[int]:
    return await ledger_of(db).jobs_renew_leases(db, jobs, now=clock.now(), lease_ms=LEASE_MS)


async def _lock(db: Database, fence: Fence, clock: ManualClock) -> None:
    async with db.begin() as conn:
        await ledger_of(conn).job_lock_fenced(conn, fence, now=clock.now())


async def test_renewal_keeps_job_alive_past_original_lease_L10(
    db: Database, clock: ManualClock
) -> None:
    renewed_id = await add_job(db, clock.now())
    control_id = await add_job(db, clock.now())
    claimed = {j.id: j for j in await claim(db, clock.now())}
    start = clock.now()
    clock.advance(seconds=50)
    assert await _renew(db, [claimed[renewed_id]], clock) == {renewed_id}
    assert (await job_row(db, renewed_id)).lease_until == start + timedelta(seconds=110)
    clock.advance(seconds=50)  # t+100: past the original lease of both jobs
    report = await rescue(db, clock.now())
    assert report.retried == [control_id]  # the control job, never renewed, is reclaimed
    assert report.dead == []
    row = await job_row(db, renewed_id)
    assert (row.status, row.lease_token) == ("running", claimed[renewed_id].lease_token)
    (attempt,) = await attempt_rows(db, renewed_id)
    assert attempt.status == "running"
    # and it keeps living as long as it keeps renewing
    assert await _renew(db, [claimed[renewed_id]], clock) == {renewed_id}
    assert (await rescue(db, clock.advance(seconds=59))).retried == []


async def test_renewal_never_extends_past_execution_deadline_L11(
    db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now(), execution_timeout_ms=90_000)
    job = await claim_one(db, clock.now())
    deadline = clock.now() + timedelta(seconds=90)
    assert job.execution_deadline == deadline
    assert job.lease_until == clock.now() + timedelta(seconds=60)
    clock.advance(seconds=50)
    assert await _renew(db, [job], clock) == {job_id}
    row = await job_row(db, job_id)
    assert row.lease_until == deadline  # not t+110
    assert row.execution_deadline == deadline
    clock.advance(seconds=39, ms=999)
    assert await _renew(db, [job], clock) == {job_id}
    assert (await job_row(db, job_id)).lease_until == deadline


async def test_renewal_after_deadline_reports_job_lost_L11(
    db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now(), execution_timeout_ms=90_000)
    other_id = await add_job(db, clock.now())
    claimed = await claim(db, clock.now())
    clock.advance(seconds=50)
    assert await _renew(db, claimed, clock) == {job_id, other_id}
    lease_before = (await job_row(db, job_id)).lease_until
    clock.advance(seconds=40)  # exactly the deadline of job_id
    assert await _renew(db, claimed, clock) == {other_id}
    assert (await job_row(db, job_id)).lease_until == lease_before
    report = await rescue(db, clock.now())
    assert report.retried == [job_id]
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.error_code) == ("failed", "deadline_exceeded")


async def test_stale_executor_cannot_renew_L9(db: Database, clock: ManualClock) -> None:
    job_id = await add_job(db, clock.now())
    old = await claim_one(db, clock.now())
    clock.advance(seconds=61)
    assert (await rescue(db, clock.now())).retried == [job_id]
    assert await _renew(db, [old], clock) == set()  # reclaimed: pending, no lease
    clock.advance(seconds=30)
    new = await claim_one(db, clock.now())
    lease_until = (await job_row(db, job_id)).lease_until
    assert lease_until == clock.now() + timedelta(seconds=60)
    clock.advance(seconds=10)
    assert await _renew(db, [old], clock) == set()
    assert (await job_row(db, job_id)).lease_until == lease_until
    # a forged fence with the current token but the old generation fails too
    forged = replace(new, generation=new.generation - 1)
    assert await _renew(db, [forged], clock) == set()
    assert await _renew(db, [new], clock) == {job_id}
    # a canceled job (generation bumped) cannot be renewed either
    async with db.begin() as conn:
        await ledger_of(conn).job_cancel(conn, job_id, now=clock.now())
    assert await _renew(db, [new], clock) == set()
    assert (await job_row(db, job_id)).lease_until is None


async def test_lock_fenced_accepts_owner_and_rejects_stale_fences_L13(
    db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    await _lock(db, job.fence, clock)  # the owner passes
    with pytest.raises(LeaseLostError):
        await _lock(db, replace(job.fence, generation=job.generation + 1), clock)
    with pytest.raises(LeaseLostError):
        await _lock(db, replace(job.fence, lease_token="not-the-token"), clock)
    with pytest.raises(LeaseLostError):
        await _lock(db, replace(job.fence, job_id=job_id + 1000), clock)
    async with db.begin() as conn:
        await ledger_of(conn).job_cancel(conn, job_id, now=clock.now())
    with pytest.raises(LeaseLostError):
        await _lock(db, job.fence, clock)


async def test_lock_fenced_rejects_after_deadline_L11_L13(db: Database, clock: ManualClock) -> None:
    await add_job(db, clock.now(), execution_timeout_ms=30_000)
    job = await claim_one(db, clock.now())
    clock.advance(seconds=29, ms=999)
    await _lock(db, job.fence, clock)
    clock.advance(ms=1)  # deadline reached; the lease row is still "running"
    with pytest.raises(LeaseLostError):
        await _lock(db, job.fence, clock)
    assert (await job_row(db, job.id)).status == "running"


async def test_side_effect_marker_then_lease_expiry_dead_letters_L17(
    db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    marked_at = clock.advance(seconds=5)
    await ledger_of(db).job_mark_side_effect(db, job.fence, now=marked_at)
    row = await job_row(db, job_id)
    assert row.side_effect_at == marked_at
    (attempt,) = await attempt_rows(db, job_id)
    assert attempt.side_effect_at == marked_at
    clock.advance(seconds=60)  # lease (claim + 60 s) expired: the executor died mid-call
    report = await rescue(db, clock.now())
    assert (report.dead, report.retried) == ([job_id], [])
    row = await job_row(db, job_id)
    assert (row.status, row.last_error_code, row.lease_token) == (
        "dead", "external_outcome_unconfirmed", None,
    )  # fmt: skip
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.error_code) == ("failed", "external_outcome_unconfirmed")
    # never resent automatically
    assert await claim(db, clock.advance(seconds=3_600)) == []


async def test_stale_executor_cannot_mark_side_effect_L9(db: Database, clock: ManualClock) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    async with db.begin() as conn:
        await ledger_of(conn).job_cancel(conn, job_id, now=clock.now())
    with pytest.raises(LeaseLostError):
        await ledger_of(db).job_mark_side_effect(db, job.fence, now=clock.now())
    assert (await job_row(db, job_id)).side_effect_at is None
    (attempt,) = await attempt_rows(db, job_id)
    assert attempt.side_effect_at is None


async def test_side_effect_marker_is_cleared_by_the_next_claim_L17(
    db: Database, clock: ManualClock
) -> None:
    # without a marker the drain reschedules instead of dead-lettering
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    await ledger_of(db).job_mark_side_effect(db, job.fence, now=clock.now())
    assert await settle_single(db, job, Outcome.retry("409 conflict"), clock.now())
    clock.advance(seconds=30)
    again = await claim_one(db, clock.now())
    assert (await job_row(db, job_id)).side_effect_at is None
    clock.advance(seconds=61)
    report = await rescue(db, clock.now())
    assert (report.retried, report.dead) == ([again.id], [])
    assert (await job_row(db, job_id)).last_error_code == "lease_expired"


async def test_a_receipt_after_the_marker_confirms_the_write_L17_L14(
    db: Database, clock: ManualClock
) -> None:
    # mark → send → the confirmed result committed as a step receipt → the
    # executor dies before settling: the drain retries (the re-run reuses the
    # receipt) instead of dead-lettering a write whose outcome is known
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    ctx = JobContext(job, db, clock)
    await ctx.mark_side_effect()
    assert (await job_row(db, job_id)).side_effect_at is not None

    async def record(conn: AsyncConnection) -> dict[str, int]:
        return {"status": 201}

    assert await ctx.step("http_result", record) == {"status": 201}
    assert ctx.side_effect_marked is False
    assert (await job_row(db, job_id)).side_effect_at is None
    (attempt,) = await attempt_rows(db, job_id)
    assert attempt.side_effect_at is not None  # the attempt keeps its history
    clock.advance(seconds=61)
    report = await rescue(db, clock.now())
    assert (report.retried, report.dead) == ([job_id], [])


async def test_a_step_without_a_marker_leaves_side_effects_alone_L17(
    db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    ctx = JobContext(job, db, clock)

    async def record(conn: AsyncConnection) -> int:
        return 1

    await ctx.step("internal", record)
    await ctx.mark_side_effect()  # a later unsafe write, never confirmed
    clock.advance(seconds=61)
    report = await rescue(db, clock.now())
    assert (report.dead, report.retried) == ([job_id], [])


async def test_a_committed_step_is_replayed_once_past_the_budget_L20_L14(
    db: Database, clock: ManualClock
) -> None:
    # a one-attempt job whose step committed before its executor died: the
    # drain replays it at once (the re-run only finds the receipt and
    # settles) instead of dead-lettering finished work as attempts_exhausted;
    # a second death after that is dead, so a crashing handler cannot loop
    job_id = await add_job(db, clock.now(), max_attempts=1)
    job = await claim_one(db, clock.now())

    async def record(conn: AsyncConnection) -> dict[str, bool]:
        return {"done": True}

    await JobContext(job, db, clock).step("result", record)
    clock.advance(seconds=61)
    report = await rescue(db, clock.now())
    assert (report.retried, report.dead) == ([job_id], [])
    row = await job_row(db, job_id)
    assert (row.status, row.run_at, row.last_error_code) == (
        "pending",
        clock.now(),
        "lease_expired",
    )
    again = await claim_one(db, clock.now())
    assert again.attempt == 2
    assert await JobContext(again, db, clock).step("result", record) == {"done": True}
    clock.advance(seconds=61)
    report = await rescue(db, clock.now())
    assert (report.retried, report.dead) == ([], [job_id])
    assert (await job_row(db, job_id)).last_error_code == "attempts_exhausted"


async def test_without_a_committed_step_the_budget_holds_L20(
    db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now(), max_attempts=1)
    await claim_one(db, clock.now())
    clock.advance(seconds=61)
    report = await rescue(db, clock.now())
    assert (report.retried, report.dead) == ([], [job_id])
