"""Settlement (SPEC L-3, L-4, L-5, L-9, L-17, L-20).

Covers: success and skipped (L-3, L-4: attempt ``skipped``, parent
``succeeded``) on the batched and single paths; automatic retry with backoff
30 s, 60 s, 120 s … capped at 15 min (L-5); maxAttempts exhausted → dead
``attempts_exhausted``; permanent → dead; unconfirmed → dead
``external_outcome_unconfirmed`` (L-17); a finished attempt row is never
rewritten (L-4); a stale executor cannot settle after a manual retry (L-9) or
after the drain reclaimed its lease and another claimer took the job (L-20).
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.errors import InvalidStateError
from flowledger.ledger.backoff import CAP_MS, backoff_ms
from flowledger.ledger.models import ClaimedJob, Outcome
from tests.integration.ledger_helpers import (
    LONG_TYPE,
    add_job,
    attempt_rows,
    claim,
    claim_one,
    job_row,
    rescue,
    settle_batch,
    settle_single,
)
from tests.ledger_access import ledger_of

SETTLE_PATHS = ["batch", "single"]


async def _settle(
    path: str, db: Database, job: ClaimedJob, outcome: Outcome, clock: ManualClock
) -> bool:
    if path == "batch":
        return job.id in await settle_batch(db, [(job, outcome)], clock.now())
    return await settle_single(db, job, outcome, clock.now())


def test_backoff_ms_doubles_from_30s_and_caps_at_15_min_L5() -> None:
    assert [backoff_ms(n) for n in range(1, 8)] == [
        30_000, 60_000, 120_000, 240_000, 480_000, 900_000, 900_000,
    ]  # fmt: skip
    assert CAP_MS == 15 * 60 * 1000
    assert backoff_ms(0) == 30_000
    assert backoff_ms(17) == backoff_ms(1_000) == CAP_MS


@pytest.mark.parametrize("path", SETTLE_PATHS)
async def test_success_settles_job_and_attempt_L3(
    path: str, db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    now = clock.advance(seconds=3)
    assert await _settle(path, db, job, Outcome.success({"n": 7}), clock) is True
    row = await job_row(db, job_id)
    assert (row.status, row.result, row.last_error, row.lease_token) == (
        "succeeded", {"n": 7}, None, None,
    )  # fmt: skip
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.finished_at, attempt.duration_ms) == ("succeeded", now, 3_000)


@pytest.mark.parametrize("path", SETTLE_PATHS)
async def test_skipped_attempt_succeeds_parent_L4(
    path: str, db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    assert await _settle(path, db, job, Outcome.skipped("subscription disabled"), clock)
    row = await job_row(db, job_id)
    assert (row.status, row.result) == ("succeeded", {"skipped": "subscription disabled"})
    (attempt,) = await attempt_rows(db, job_id)
    assert attempt.status == "skipped"


async def test_batch_settles_mixed_outcomes_each_correctly_L4(
    db: Database, clock: ManualClock
) -> None:
    ids = [await add_job(db, clock.now()) for _ in range(4)]
    claimed = await claim(db, clock.now())
    by_id = {j.id: j for j in claimed}
    outcomes = [
        Outcome.success({"i": 0}),
        Outcome.skipped("nothing to do"),
        Outcome.success(),
        Outcome.retry("boom", code="http_500"),
    ]
    items = [(by_id[i], o) for i, o in zip(ids, outcomes, strict=True)]
    assert await settle_batch(db, items, clock.now()) == set(ids)
    rows = [await job_row(db, i) for i in ids]
    assert [r.status for r in rows] == ["succeeded", "succeeded", "succeeded", "pending"]
    assert [r.result for r in rows[:3]] == [{"i": 0}, {"skipped": "nothing to do"}, None]
    assert rows[3].last_error_code == "http_500"
    statuses = [(await attempt_rows(db, i))[0].status for i in ids]
    assert statuses == ["succeeded", "skipped", "succeeded", "failed"]


@pytest.mark.parametrize("path", SETTLE_PATHS)
async def test_retry_backoff_ladder_relative_to_clock_L5(
    path: str, db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now(), type=LONG_TYPE.name)
    expected = [30, 60, 120, 240, 480, 900, 900]
    for attempt_no, seconds in enumerate(expected, start=1):
        job = await claim_one(db, clock.now())
        assert (job.id, job.attempt) == (job_id, attempt_no)
        now = clock.advance(seconds=2)
        assert await _settle(path, db, job, Outcome.retry(f"fail {attempt_no}"), clock)
        row = await job_row(db, job_id)
        assert (row.status, row.attempts, row.last_error) == (
            "pending", attempt_no, f"fail {attempt_no}",
        )  # fmt: skip
        assert row.run_at == now + timedelta(seconds=seconds)
        assert row.lease_token is None
        clock.advance(seconds=seconds - 1)
        assert await claim(db, clock.now()) == []  # not before runAt
        clock.advance(seconds=1)
    attempts = await attempt_rows(db, job_id)
    assert [a.attempt for a in attempts] == list(range(1, 8))
    assert {a.status for a in attempts} == {"failed"}
    assert attempts[0].error == "fail 1"


async def test_retry_with_explicit_delay_uses_it_L5(db: Database, clock: ManualClock) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    assert await settle_single(db, job, Outcome.retry("later", delay_ms=5_000), clock.now())
    assert (await job_row(db, job_id)).run_at == clock.now() + timedelta(seconds=5)


@pytest.mark.parametrize("path", SETTLE_PATHS)
async def test_exhausted_attempts_go_dead_L5(path: str, db: Database, clock: ManualClock) -> None:
    job_id = await add_job(db, clock.now(), max_attempts=2)
    job = await claim_one(db, clock.now())
    assert await _settle(path, db, job, Outcome.retry("first"), clock)
    clock.advance(seconds=30)
    job = await claim_one(db, clock.now())
    assert job.attempt == 2
    assert await _settle(path, db, job, Outcome.retry("second"), clock)
    row = await job_row(db, job_id)
    assert (row.status, row.attempts, row.last_error, row.last_error_code) == (
        "dead", 2, "second", "attempts_exhausted",
    )  # fmt: skip
    assert [a.status for a in await attempt_rows(db, job_id)] == ["failed", "failed"]
    assert await claim(db, clock.advance(seconds=3_600)) == []


@pytest.mark.parametrize("path", SETTLE_PATHS)
async def test_permanent_failure_goes_dead_at_once_L3(
    path: str, db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    assert await _settle(path, db, job, Outcome.dead("bad input", code="invalid_payload"), clock)
    row = await job_row(db, job_id)
    assert (row.status, row.attempts, row.last_error_code) == ("dead", 1, "invalid_payload")
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.error, attempt.error_code) == (
        "failed", "bad input", "invalid_payload",
    )  # fmt: skip


@pytest.mark.parametrize("path", SETTLE_PATHS)
async def test_unconfirmed_goes_dead_pending_confirmation_L17(
    path: str, db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    assert await _settle(path, db, job, Outcome.unconfirmed("no response"), clock)
    row = await job_row(db, job_id)
    assert (row.status, row.attempts, row.last_error_code) == (
        "dead", 1, "external_outcome_unconfirmed",
    )  # fmt: skip
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.error_code) == ("failed", "external_outcome_unconfirmed")
    # never resent automatically, however long we wait or drain
    assert await claim(db, clock.advance(seconds=86_400)) == []
    assert (await rescue(db, clock.now())).retried == []


@pytest.mark.parametrize("path", SETTLE_PATHS)
async def test_finished_attempt_is_never_rewritten_L4(
    path: str, db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    settled_at = clock.advance(seconds=1)
    assert await _settle(path, db, job, Outcome.success({"v": 1}), clock)
    before = await attempt_rows(db, job_id)
    clock.advance(seconds=5)
    # a duplicate settlement of the same fence, with another outcome, is refused
    assert await _settle(path, db, job, Outcome.dead("late"), clock) is False
    assert await _settle(path, db, job, Outcome.success({"v": 2}), clock) is False
    async with db.begin() as conn:
        with pytest.raises(InvalidStateError):
            await ledger_of(conn).job_cancel(conn, job_id, now=clock.now())
    assert await attempt_rows(db, job_id) == before
    assert before[0].finished_at == settled_at
    row = await job_row(db, job_id)
    assert (row.status, row.result) == ("succeeded", {"v": 1})


@pytest.mark.parametrize("path", SETTLE_PATHS)
async def test_stale_executor_cannot_settle_after_manual_retry_L9(
    path: str, db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    old = await claim_one(db, clock.now())
    async with db.begin() as conn:  # an operator cancels, then retries by hand
        await ledger_of(conn).job_cancel(conn, job_id, now=clock.now())
        await ledger_of(conn).job_retry(conn, job_id, now=clock.now())
    new = await claim_one(db, clock.now())
    assert (old.generation, new.generation, new.attempt) == (1, 3, 1)  # cancel +1, retry +1
    before_rows = await attempt_rows(db, job_id)
    before_job = await job_row(db, job_id)
    clock.advance(seconds=1)
    if path == "batch":
        assert await settle_batch(db, [(old, Outcome.success({"old": True}))], clock.now()) == set()
        assert await settle_batch(db, [(old, Outcome.retry("old"))], clock.now()) == set()
    else:
        assert await settle_single(db, old, Outcome.success({"old": True}), clock.now()) is False
    assert await attempt_rows(db, job_id) == before_rows
    assert await job_row(db, job_id) == before_job
    assert [a.status for a in before_rows] == ["canceled", "running"]
    # the current executor still settles
    assert await _settle(path, db, new, Outcome.success({"new": True}), clock)
    assert (await job_row(db, job_id)).result == {"new": True}


@pytest.mark.parametrize("path", SETTLE_PATHS)
async def test_stale_executor_cannot_settle_after_drain_reclaim_L20(
    path: str, db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    old = await claim_one(db, clock.now(), node="slow-node")
    clock.advance(seconds=61)  # lease expired
    report = await rescue(db, clock.now())
    assert report.retried == [job_id]
    clock.advance(seconds=30)  # backoff after attempt 1
    new = await claim_one(db, clock.now(), node="fast-node")
    assert (new.id, new.generation, new.attempt) == (job_id, old.generation, 2)
    assert new.lease_token != old.lease_token
    before_rows = await attempt_rows(db, job_id)
    before_job = await job_row(db, job_id)
    if path == "batch":
        assert await settle_batch(db, [(old, Outcome.success())], clock.now()) == set()
        assert await settle_batch(db, [(old, Outcome.dead("x"))], clock.now()) == set()
    else:
        assert await settle_single(db, old, Outcome.success(), clock.now()) is False
    assert await job_row(db, job_id) == before_job
    assert await attempt_rows(db, job_id) == before_rows
    assert [(a.status, a.error_code) for a in before_rows] == [
        ("failed", "lease_expired"), ("running", None),
    ]  # fmt: skip
    assert before_job.lease_owner == "fast-node"


async def test_batch_settles_live_jobs_and_fences_out_stale_ones_L9(
    db: Database, clock: ManualClock
) -> None:
    stale_id = await add_job(db, clock.now())
    live_id = await add_job(db, clock.now())
    stale, live = await claim(db, clock.now())
    assert (stale.id, live.id) == (stale_id, live_id)
    async with db.begin() as conn:
        await ledger_of(conn).job_cancel(conn, stale_id, now=clock.now())
    items = [(stale, Outcome.success({"s": 1})), (live, Outcome.skipped("nothing"))]
    assert await settle_batch(db, items, clock.now()) == {live_id}
    assert ((await job_row(db, stale_id)).status, (await job_row(db, live_id)).status) == (
        "canceled", "succeeded",
    )  # fmt: skip
    assert [a.status for a in await attempt_rows(db, stale_id)] == ["canceled"]
    assert [a.status for a in await attempt_rows(db, live_id)] == ["skipped"]


@pytest.mark.parametrize("path", SETTLE_PATHS)
async def test_released_attempt_does_not_count_L6(
    path: str, db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    now = clock.advance(seconds=4)
    assert await _settle(path, db, job, Outcome.released("worker shutting down"), clock)
    row = await job_row(db, job_id)
    assert (row.status, row.attempts, row.run_at, row.lease_token) == ("pending", 0, now, None)
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.finished_at) == ("canceled", now)
    assert (await claim_one(db, now)).attempt == 1
