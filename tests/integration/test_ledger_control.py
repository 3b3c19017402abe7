"""Control of jobs from outside their executor (SPEC L-15, L-18, L-22, L-5, L-9,
L-24, L-17).

Covers: idempotencyKey dedupe, also between two concurrent PostgreSQL
transactions (L-15); pause/resume with an instance keeps the remaining time and
fences out the running executor (L-18, L-9); a running job with a side-effect
marker goes to the pending-confirmation dead letter on pause (L-18, L-17);
non-pausable types are left alone (L-18); cleanup cancels exactly the
advancement types (L-22), table-driven over every built-in type; manual retry
(L-5, L-24) and cancel (L-24, L-9).
"""

from __future__ import annotations

import asyncio
from datetime import timedelta

import pytest
from sqlalchemy import func, select, text

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.engine.job_types import CLEANUP_TYPES, PAUSABLE_TYPES
from flowledger.errors import InvalidStateError
from flowledger.handlers import BUILTIN_JOB_TYPES
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.models import JobSpec, Outcome
from tests.integration.ledger_helpers import (
    LEDGER,
    OUTBOUND,
    TEST_TYPE,
    add_job,
    add_job_result,
    attempt_rows,
    claim,
    claim_one,
    count_rows,
    force_status,
    job_row,
    settle_single,
)
from tests.ledger_access import ledger_of

INSTANCE = 42
PAUSABLE = {
    "delay_wake", "task_timeout", "trigger_dispatch",
    "external_dispatch", "subprocess_spawn", "subprocess_join",
}  # fmt: skip
CLEANED = {"delay_wake", "task_timeout", "external_dispatch", "subprocess_spawn", "subprocess_join"}
BUILTIN = CLEANED | {
    "trigger_dispatch", "schedule_launch", "event_dispatch",
    "webhook_delivery", "compensation_action", "automation_action",
}  # fmt: skip


def test_builtin_type_table_is_complete_L2() -> None:
    assert {t.name for t in BUILTIN_JOB_TYPES} >= BUILTIN
    assert len(BUILTIN) == 11


# ----------------------------------------------------------- idempotency L-15


async def test_idempotency_key_dedupes_L15(db: Database, clock: ManualClock) -> None:
    first = await add_job_result(db, clock.now(), idempotency_key="order-7:approved")
    second = await add_job_result(
        db, clock.advance(seconds=5), idempotency_key="order-7:approved", payload={"x": 1}
    )
    other = await add_job_result(db, clock.now(), idempotency_key="order-8:approved")
    assert (first.created, second.created, other.created) == (True, False, True)
    assert second.job_id == first.job_id != other.job_id
    assert await count_rows(db, jobs) == 2
    assert (await job_row(db, first.job_id)).payload == {}


async def _wait_for_lock_waiter(db: Database) -> None:
    query = text(
        "SELECT count(*) FROM pg_stat_activity "
        "WHERE datname = current_database() AND wait_event_type = 'Lock'"
    )
    for _ in range(500):
        async with db.engine.connect() as conn:
            if (await conn.execute(query)).scalar_one() >= 1:
                return
        await asyncio.sleep(0.01)
    raise AssertionError("the second enqueuer never waited on the first one's insert")


@pytest.mark.parametrize("first_commits", [True, False])
@pytest.mark.parametrize("backend", ["postgresql"])  # PostgreSQL-only property
async def test_concurrent_duplicate_enqueue_creates_one_row_L15(
    first_commits: bool, backend: str, db: Database, clock: ManualClock
) -> None:
    spec = JobSpec(type=TEST_TYPE, idempotency_key="evt-1")
    inserted, release = asyncio.Event(), asyncio.Event()

    async def first() -> int:
        try:
            async with db.begin() as conn:
                result = await ledger_of(conn).job_insert(conn, spec, now=clock.now())
                assert result.created
                inserted.set()
                await release.wait()
                if not first_commits:
                    raise RuntimeError("rollback")
            return result.job_id
        except RuntimeError:
            return -1

    async def second() -> tuple[int, bool]:
        await inserted.wait()
        async with db.begin() as conn:
            result = await ledger_of(conn).job_insert(conn, spec, now=clock.now())
        return result.job_id, result.created

    t1, t2 = asyncio.create_task(first()), asyncio.create_task(second())
    await inserted.wait()
    await _wait_for_lock_waiter(db)  # the second is blocked on the unique index
    release.set()
    first_id, (second_id, created) = await asyncio.gather(t1, t2)
    async with db.read() as conn:
        ids = list((await conn.execute(select(jobs.c.id))).scalars())
    assert ids == [second_id]
    if first_commits:
        assert (second_id, created) == (first_id, False)
    else:
        assert created is True


# ------------------------------------------------------------ pause L-18


async def _pause(db: Database, clock: ManualClock, instance: int = INSTANCE) -> list[int]:
    async with db.begin() as conn:
        return await ledger_driver(db).jobs_pause(
            conn, instance, types=PAUSABLE_TYPES, now=clock.now()
        )


async def _resume(db: Database, clock: ManualClock, instance: int = INSTANCE) -> list[int]:
    async with db.begin() as conn:
        return await ledger_driver(db).jobs_resume(
            conn, instance, types=PAUSABLE_TYPES, now=clock.now()
        )


async def test_pause_resume_keeps_remaining_time_L18(db: Database, clock: ManualClock) -> None:
    start = clock.now()
    job_id = await add_job(db, start, type="delay_wake", instance_id=INSTANCE, delay_ms=300_000)
    clock.advance(seconds=100)
    assert await _pause(db, clock) == [job_id]
    row = await job_row(db, job_id)
    assert (row.status, row.paused_remaining_ms, row.generation) == ("paused", 200_000, 2)
    clock.advance(seconds=900)  # t+1000: long past the original due time
    assert await claim(db, clock.now()) == []
    assert await _resume(db, clock) == [job_id]
    row = await job_row(db, job_id)
    assert (row.status, row.paused_remaining_ms, row.generation) == ("pending", None, 3)
    assert row.run_at == start + timedelta(seconds=1200)
    assert await claim(db, clock.advance(seconds=199, ms=999)) == []
    assert [j.id for j in await claim(db, clock.advance(ms=1))] == [job_id]


async def test_pause_fences_out_running_executor_L18_L9(db: Database, clock: ManualClock) -> None:
    job_id = await add_job(db, clock.now(), type="task_timeout", instance_id=INSTANCE)
    job = await claim_one(db, clock.now())
    clock.advance(seconds=10)
    assert await _pause(db, clock) == [job_id]
    row = await job_row(db, job_id)
    assert (row.status, row.generation, row.attempts, row.lease_token) == ("paused", 2, 0, None)
    assert row.paused_remaining_ms == 0
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.finished_at) == ("canceled", clock.now())
    assert await settle_single(db, job, Outcome.success(), clock.now()) is False
    assert (
        await ledger_of(db).jobs_renew_leases(db, [job], now=clock.now(), lease_ms=60_000) == set()
    )
    assert (await job_row(db, job_id)).status == "paused"
    resumed_at = clock.advance(seconds=50)
    await _resume(db, clock)
    row = await job_row(db, job_id)
    assert (row.status, row.run_at, row.generation) == ("pending", resumed_at, 3)


async def test_pause_with_side_effect_marker_dead_letters_L18_L17(
    db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now(), type="external_dispatch", instance_id=INSTANCE)
    job = await claim_one(db, clock.now(), pool=OUTBOUND)
    await ledger_of(db).job_mark_side_effect(db, job.fence, now=clock.now())
    assert await _pause(db, clock) == []
    row = await job_row(db, job_id)
    assert (row.status, row.last_error_code, row.generation, row.lease_token) == (
        "dead", "external_outcome_unconfirmed", 2, None,
    )  # fmt: skip
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.error_code) == ("failed", "external_outcome_unconfirmed")
    assert await settle_single(db, job, Outcome.success(), clock.now()) is False
    assert await _resume(db, clock) == []
    assert (await job_row(db, job_id)).status == "dead"


@pytest.mark.parametrize("job_type", sorted(BUILTIN))
async def test_pause_touches_only_pausable_types_L18(
    job_type: str, db: Database, clock: ManualClock
) -> None:
    job_id = await add_job(db, clock.now(), type=job_type, instance_id=INSTANCE, delay_ms=5_000)
    other = await add_job(db, clock.now(), type=job_type, instance_id=INSTANCE + 1)
    before = await job_row(db, job_id)
    paused = await _pause(db, clock)
    if job_type in PAUSABLE:
        assert paused == [job_id]
        assert (await job_row(db, job_id)).status == "paused"
    else:
        assert paused == []
        assert await job_row(db, job_id) == before
    assert (await job_row(db, other)).status == "pending"


# ---------------------------------------------------------- cleanup L-22


@pytest.mark.parametrize("job_type", sorted(BUILTIN))
async def test_cleanup_cancels_exactly_advancement_types_L22(
    job_type: str, db: Database, clock: ManualClock
) -> None:
    pool = LEDGER if job_type in {"delay_wake", "task_timeout", "subprocess_spawn",
                                  "subprocess_join", "schedule_launch"} else OUTBOUND  # fmt: skip
    running = await add_job(db, clock.now(), type=job_type, instance_id=INSTANCE)
    job = await claim_one(db, clock.now(), pool=pool)
    assert job.id == running
    pending = await add_job(db, clock.now(), type=job_type, instance_id=INSTANCE, delay_ms=9_000)
    paused = await add_job(db, clock.now(), type=job_type, instance_id=INSTANCE)
    await force_status(db, paused, "paused", paused_remaining_ms=1_000)
    dead = await add_job(db, clock.now(), type=job_type, instance_id=INSTANCE)
    await force_status(db, dead, "dead")
    elsewhere = await add_job(db, clock.now(), type=job_type, instance_id=INSTANCE + 1)
    ids = [running, pending, paused, dead, elsewhere]
    before = {i: await job_row(db, i) for i in ids}
    async with db.begin() as conn:
        canceled = await ledger_driver(db).jobs_cancel_for_instance(
            conn, INSTANCE, types=CLEANUP_TYPES, now=clock.now()
        )
    after = {i: await job_row(db, i) for i in ids}
    if job_type in CLEANED:
        assert canceled == [running, pending, paused]
        for i in (running, pending, paused):
            assert (after[i].status, after[i].cancel_reason, after[i].lease_token) == (
                "canceled", "instance ended", None,
            )  # fmt: skip
            assert after[i].generation == before[i].generation + 1
        (attempt,) = await attempt_rows(db, running)
        assert attempt.status == "canceled"
        assert await settle_single(db, job, Outcome.success(), clock.now()) is False
        assert (await job_row(db, running)).status == "canceled"
    else:
        assert canceled == []
        for i in (running, pending, paused):
            assert after[i] == before[i]
    assert after[dead] == before[dead]
    assert after[elsewhere] == before[elsewhere]


# ---------------------------------------------------- manual retry L-5, L-24


async def _job_in(db: Database, clock: ManualClock, status: str) -> int:
    job_type = "delay_wake" if status == "paused" else TEST_TYPE.name
    job_id = await add_job(db, clock.now(), type=job_type, instance_id=INSTANCE)
    if status in ("pending", "paused", "canceled"):
        if status == "paused":
            await _pause(db, clock)
        if status == "canceled":
            async with db.begin() as conn:
                await ledger_of(conn).job_cancel(conn, job_id, now=clock.now())
        return job_id
    job = await claim_one(db, clock.now())
    if status == "succeeded":
        assert await settle_single(db, job, Outcome.success(), clock.now())
    elif status in ("dead", "failed"):
        assert await settle_single(db, job, Outcome.dead("boom"), clock.now())
        if status == "failed":
            await force_status(db, job_id, "failed")
    return job_id


@pytest.mark.parametrize("status", ["failed", "dead", "canceled"])
async def test_manual_retry_of_retryable_job_L5_L24(
    status: str, db: Database, clock: ManualClock
) -> None:
    job_id = await _job_in(db, clock, status)
    before = await job_row(db, job_id)
    old_attempts = await attempt_rows(db, job_id)
    now = clock.advance(seconds=30)
    async with db.begin() as conn:
        await ledger_of(conn).job_retry(conn, job_id, now=now)
    row = await job_row(db, job_id)
    assert (row.status, row.attempts, row.generation, row.run_at) == (
        "pending", 0, before.generation + 1, now,
    )  # fmt: skip
    assert row.operation_key == before.operation_key
    new = await claim_one(db, now)
    assert (new.id, new.attempt, new.generation) == (job_id, 1, before.generation + 1)
    attempts = await attempt_rows(db, job_id)
    assert attempts[:-1] == old_attempts  # every earlier attempt row kept, unchanged
    assert (attempts[-1].generation, attempts[-1].attempt) == (before.generation + 1, 1)


async def test_manual_retry_can_stagger_run_at_L24(db: Database, clock: ManualClock) -> None:
    job_id = await _job_in(db, clock, "dead")
    later = clock.now() + timedelta(seconds=3)
    async with db.begin() as conn:
        await ledger_of(conn).job_retry(conn, job_id, now=clock.now(), run_at=later)
    assert (await job_row(db, job_id)).run_at == later


@pytest.mark.parametrize(
    ("status", "message"),
    [
        ("pending", "automatic retry is already scheduled"),
        ("running", "only failed, dead or canceled"),
        ("succeeded", "only failed, dead or canceled"),
        ("paused", "resume the instance"),
    ],
)
async def test_manual_retry_refuses_other_states_L24(
    status: str, message: str, db: Database, clock: ManualClock
) -> None:
    job_id = await _job_in(db, clock, status)
    before = await job_row(db, job_id)
    assert before.status == status
    with pytest.raises(InvalidStateError, match=message) as info:
        async with db.begin() as conn:
            await ledger_of(conn).job_retry(conn, job_id, now=clock.now())
    assert info.value.details["status"] == status
    assert await job_row(db, job_id) == before


# ---------------------------------------------------------- cancel L-24


@pytest.mark.parametrize("status", ["pending", "running", "paused", "failed", "dead"])
async def test_cancel_L24(status: str, db: Database, clock: ManualClock) -> None:
    job_id = await _job_in(db, clock, status)
    before = await job_row(db, job_id)
    async with db.begin() as conn:
        await ledger_of(conn).job_cancel(conn, job_id, now=clock.now(), reason="operator skip")
    row = await job_row(db, job_id)
    assert (row.status, row.cancel_reason, row.generation, row.lease_token) == (
        "canceled", "operator skip", before.generation + 1, None,
    )  # fmt: skip
    assert await claim(db, clock.advance(seconds=3_600)) == []


@pytest.mark.parametrize("status", ["succeeded", "canceled"])
async def test_cancel_refuses_finished_jobs_L24(
    status: str, db: Database, clock: ManualClock
) -> None:
    job_id = await _job_in(db, clock, status)
    before = await job_row(db, job_id)
    with pytest.raises(InvalidStateError):
        async with db.begin() as conn:
            await ledger_of(conn).job_cancel(conn, job_id, now=clock.now())
    assert await job_row(db, job_id) == before


async def test_canceled_running_executor_cannot_settle_L9(db: Database, clock: ManualClock) -> None:
    job_id = await add_job(db, clock.now())
    job = await claim_one(db, clock.now())
    async with db.begin() as conn:
        await ledger_of(conn).job_cancel(conn, job_id, now=clock.now())
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.error) == ("canceled", "canceled by operator")
    assert await settle_single(db, job, Outcome.success(), clock.now()) is False
    assert await settle_single(db, job, Outcome.retry("x"), clock.now()) is False
    async with db.read() as conn:
        query = select(jobs.c.status, func.count()).group_by(jobs.c.status)
        statuses = (await conn.execute(query)).all()
    assert [tuple(s) for s in statuses] == [("canceled", 1)]
    assert [a.status for a in await attempt_rows(db, job_id)] == ["canceled"]
