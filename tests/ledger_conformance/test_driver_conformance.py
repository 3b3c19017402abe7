"""One set of cases for every LedgerDriver method and every job state
transition (issue 16 item 2; SPEC L-1 … L-24), run against each
implementation (see ``conftest.py``). Each transition is checked against
:data:`flowledger.states.JOB_TRANSITIONS` by :func:`support.checked`."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from datetime import timedelta

import pytest
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs_table
from flowledger.engine.job_types import (
    ADVANCEMENT_TYPES,
    CLEANUP_TYPES,
    DELAY_WAKE,
    EXTERNAL_DISPATCH,
    PAUSABLE_TYPES,
    TASK_TIMEOUT,
)
from flowledger.errors import InvalidStateError, LeaseLostError, NotFoundError, UnknownJobTypeError
from flowledger.ledger.driver import LedgerDriver
from flowledger.ledger.models import Fence, JobSpec, NodeInfo, Outcome
from flowledger.ledger.types import JobTypeRegistry
from flowledger.states import JobTransition, Pool
from tests.ledger_conformance.support import (
    CF_OUT,
    CF_TYPE,
    attempt_rows,
    checked,
    in_tx,
    job,
    job_rows,
)

LEDGER = Pool.LEDGER.value
T = JobTransition


def _tick(clock: ManualClock, delta: timedelta) -> None:
    clock.advance(ms=delta / timedelta(milliseconds=1))


async def _insert(driver: LedgerDriver, db: Database, clock: ManualClock, **spec: object) -> int:
    spec.setdefault("type", CF_TYPE)
    result = await in_tx(db, lambda c: driver.job_insert(c, JobSpec(**spec), now=clock.now()))  # type: ignore[arg-type]
    return result.job_id


async def _claim(driver: LedgerDriver, db: Database, clock: ManualClock, **kw: object) -> list:  # type: ignore[type-arg]
    args: dict[str, object] = {"pool": LEDGER, "limit": 10, "node_id": "n1", "now": clock.now()}
    args.update(kw)
    return await checked(db, T.CLAIM, driver.jobs_claim(db, **args))  # type: ignore[arg-type]


async def test_a_type_given_by_name_is_resolved_by_the_callers_registry_only(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    # the ledger knows no job type by name (issue 16 item 3): a name without
    # a registry is refused and writes nothing, with one it is that type
    for insert in (
        lambda c: driver.job_insert(c, JobSpec(CF_TYPE.name), now=clock.now()),
        lambda c: driver.jobs_insert(c, [JobSpec(CF_TYPE), JobSpec(CF_OUT.name)], now=clock.now()),
    ):
        with pytest.raises(UnknownJobTypeError) as caught:
            await in_tx(db, insert)
        assert caught.value.field == "type"
    assert await job_rows(db) == {}
    registry = JobTypeRegistry([CF_OUT])
    made = await in_tx(
        db,
        lambda c: driver.jobs_insert(
            c, [JobSpec(CF_OUT.name), JobSpec(CF_TYPE)], now=clock.now(), job_types=registry
        ),
    )
    rows = await job_rows(db)
    assert [(rows[r.job_id]["type"], rows[r.job_id]["pool"]) for r in made] == [
        (CF_OUT.name, CF_OUT.pool),
        (CF_TYPE.name, CF_TYPE.pool),
    ]
    assert rows[made[0].job_id]["max_attempts"] == CF_OUT.max_attempts
    with pytest.raises(UnknownJobTypeError):  # a name the registry does not know
        await in_tx(
            db,
            lambda c: driver.job_insert(
                c, JobSpec(CF_TYPE.name), now=clock.now(), job_types=registry
            ),
        )


async def test_insert_and_idempotency(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    first = await in_tx(
        db,
        lambda c: driver.job_insert(c, JobSpec(CF_TYPE, idempotency_key="k1"), now=clock.now()),
    )
    again = await in_tx(
        db,
        lambda c: driver.job_insert(c, JobSpec(CF_TYPE, idempotency_key="k1"), now=clock.now()),
    )
    assert first.created and not again.created and again.job_id == first.job_id
    made = await in_tx(
        db,
        lambda c: driver.jobs_insert(
            c, [JobSpec(CF_TYPE, payload={"i": i}) for i in range(3)], now=clock.now()
        ),
    )
    ids = [r.job_id for r in made]
    assert all(r.created for r in made)
    rows = await job_rows(db)
    assert [rows[i]["payload"] for i in ids] == [{"i": 0}, {"i": 1}, {"i": 2}]
    row = rows[first.job_id]
    assert (row["status"], row["generation"], row["attempts"], row["max_attempts"]) == (
        "pending",
        1,
        0,
        3,
    )
    assert row["pool"] == LEDGER
    keyed = await in_tx(
        db,
        lambda c: driver.jobs_insert(
            c,
            [
                JobSpec(CF_TYPE, idempotency_key="k1"),
                JobSpec(CF_TYPE, idempotency_key="k2"),
            ],
            now=clock.now(),
        ),
    )
    assert keyed[0].job_id == first.job_id and not keyed[0].created
    assert keyed[1].created and keyed[1].job_id not in ids


async def test_claim_leases_orders_and_records_attempts(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    low = await _insert(driver, db, clock, priority=200)
    high = await _insert(driver, db, clock, priority=10, delay_ms=0)
    later = await _insert(driver, db, clock, delay_ms=60_000)
    await _insert(driver, db, clock, type=CF_OUT)  # another pool
    claimed = await _claim(driver, db, clock, lease_ms=30_000)
    assert [c.id for c in claimed] == [high, low]  # priority order; not-due and other pool left
    first = claimed[0]
    assert first.attempt == 1 and first.generation == 1 and first.lease_token
    assert first.lease_until == clock.now() + timedelta(milliseconds=30_000)
    assert first.execution_deadline == clock.now() + timedelta(
        milliseconds=CF_TYPE.execution_timeout_ms
    )
    assert first.started_at == clock.now() and first.lease_until.utcoffset() == timedelta(0)
    row = await job(db, high)
    assert (row["status"], row["lease_owner"], row["lease_token"]) == (
        "running",
        "n1",
        first.lease_token,
    )
    attempts = await attempt_rows(db)
    assert attempts[first.execution_id]["status"] == "running"
    assert attempts[first.execution_id]["job_id"] == high
    assert await driver.jobs_next_due(db, pool=LEDGER) == clock.now() + timedelta(seconds=60)
    assert (await job(db, later))["status"] == "pending"
    assert await _claim(driver, db, clock) == []
    _tick(clock, timedelta(seconds=61))
    assert [c.id for c in await _claim(driver, db, clock, order="due", limit=1)] == [later]
    assert await driver.jobs_claim(db, pool=LEDGER, limit=0, node_id="n1", now=clock.now()) == []


CLAIM_TELLS_NEXT_DUE = {"sqlite-fast", "postgresql", "postgresql-fast"}


async def test_claim_batch_reports_the_next_due_time(
    driver: LedgerDriver, driver_kind: str, db: Database, clock: ManualClock
) -> None:
    """``jobs_claim_batch`` claims as ``jobs_claim`` does and, on the drivers
    whose claim statement reads it, reports the earliest run_at of the pool's
    pending jobs it did not claim (what ``jobs_next_due`` would answer after
    the claim): another pool's jobs never count; None once nothing is pending."""
    first = await _insert(driver, db, clock, priority=10)
    second = await _insert(driver, db, clock, priority=20)
    await _insert(driver, db, clock, type=CF_OUT)  # another pool, due now
    later = await _insert(driver, db, clock, delay_ms=60_000)

    async def claim(**kw: object):  # type: ignore[no-untyped-def]
        args: dict[str, object] = {"pool": LEDGER, "limit": 10, "node_id": "n1"}
        args.update(kw, now=clock.now())
        batch = await checked(db, T.CLAIM, driver.jobs_claim_batch(db, **args))  # type: ignore[arg-type]
        assert batch.next_due_known == (driver_kind in CLAIM_TELLS_NEXT_DUE)
        if batch.next_due_known:
            assert batch.next_due == await driver.jobs_next_due(db, pool=LEDGER)
        return [c.id for c in batch.jobs], batch.next_due

    ids, due = await claim(limit=1)  # saturated: the other due job is next
    assert ids == [first]
    if driver_kind in CLAIM_TELLS_NEXT_DUE:
        assert due == (await job(db, second))["run_at"]
    ids, due = await claim()
    assert ids == [second]
    if driver_kind in CLAIM_TELLS_NEXT_DUE:
        assert due == clock.now() + timedelta(seconds=60)
        assert due.utcoffset() == timedelta(0)
    assert await claim() == ([], clock.now() + timedelta(seconds=60) if due else None)
    _tick(clock, timedelta(seconds=61))
    assert await claim(order="due") == ([later], None)
    assert await claim() == ([], None)
    empty = await driver.jobs_claim_batch(db, pool=LEDGER, limit=0, node_id="n1", now=clock.now())
    assert empty.jobs == []


async def test_an_unsaturated_claim_reports_the_next_job_not_yet_due(
    driver: LedgerDriver, driver_kind: str, db: Database, clock: ManualClock
) -> None:
    """A claim that took fewer jobs than it asked for took every due job it
    could lock, so its next due time is the earliest job not yet due (read
    past the run jobs' index entries, issue 15): a due job another claimer
    holds at that moment is its, not reported. PostgreSQL holds such a lock
    here; SQLite has one writer, so there it is the plain case."""
    if driver_kind not in CLAIM_TELLS_NEXT_DUE:
        pytest.skip("this driver's claim does not read the next due time")
    held = await _insert(driver, db, clock)
    later = await _insert(driver, db, clock, delay_ms=60_000)
    in_a_minute = (await job(db, later))["run_at"]
    if db.dialect != "postgresql":
        batch = await driver.jobs_claim_batch(
            db, pool=LEDGER, limit=4, node_id="n1", now=clock.now()
        )
        assert ([c.id for c in batch.jobs], batch.next_due) == ([held], in_a_minute)
        return
    lock = select(jobs_table.c.id).where(jobs_table.c.id == held).with_for_update()
    async with db.begin() as other:  # another claimer's lock on the due job
        await other.execute(lock)
        batch = await driver.jobs_claim_batch(
            db, pool=LEDGER, limit=4, node_id="n1", now=clock.now()
        )
    assert (batch.jobs, batch.next_due) == ([], in_a_minute)


async def test_concurrent_claims_never_share_a_job(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    await in_tx(
        db,
        lambda c: driver.jobs_insert(c, [JobSpec(CF_TYPE) for _ in range(20)], now=clock.now()),
    )
    batches = await asyncio.gather(
        *(
            driver.jobs_claim(db, pool=LEDGER, limit=7, node_id=f"n{i}", now=clock.now())
            for i in range(4)
        )
    )
    ids = [c.id for batch in batches for c in batch]
    rest = await driver.jobs_claim(db, pool=LEDGER, limit=20, node_id="n9", now=clock.now())
    ids += [c.id for c in rest]
    assert len(ids) == len(set(ids)) == 20


async def test_batch_settlement_success_skip_and_fences(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    for _ in range(4):
        await _insert(driver, db, clock)
    ok, skip, stale_gen, stale_token = await _claim(driver, db, clock)
    async with db.begin() as conn:  # a new generation: the executor is stale
        await driver.job_cancel(conn, stale_gen.id, now=clock.now())
        await driver.job_retry(conn, stale_gen.id, now=clock.now())
    wrong = replace(stale_token, lease_token="not-the-token")
    other_generation = replace(ok, generation=ok.generation + 1)  # the current token
    _tick(clock, timedelta(milliseconds=250))
    forged = driver.jobs_settle(db, [(other_generation, Outcome.success())], now=clock.now())
    assert await checked(db, None, forged) == set()
    settled = await checked(
        db,
        T.SETTLE,
        driver.jobs_settle(
            db,
            [
                (ok, Outcome.success({"n": 1})),
                (skip, Outcome.skipped("nothing to do")),
                (stale_gen, Outcome.success()),
                (wrong, Outcome.success()),
            ],
            now=clock.now(),
        ),
    )
    assert settled == {ok.id, skip.id}
    rows, attempts = await job_rows(db), await attempt_rows(db)
    assert (rows[ok.id]["status"], rows[ok.id]["result"], rows[ok.id]["lease_token"]) == (
        "succeeded",
        {"n": 1},
        None,
    )
    assert attempts[ok.execution_id]["status"] == "succeeded"
    assert attempts[ok.execution_id]["duration_ms"] == 250
    assert attempts[skip.execution_id]["status"] == "skipped"
    assert rows[stale_gen.id]["status"] == "pending" and rows[stale_gen.id]["generation"] == 3
    assert attempts[stale_gen.execution_id]["status"] == "canceled"
    assert rows[stale_token.id]["status"] == "running"
    assert attempts[stale_token.execution_id]["status"] == "running"
    again = await driver.jobs_settle(db, [(ok, Outcome.success({"n": 2}))], now=clock.now())
    assert again == set() and (await job(db, ok.id))["result"] == {"n": 1}


@pytest.mark.parametrize(
    ("outcome", "status", "code", "attempt_status"),
    [
        (Outcome.retry("boom", code="http_500"), "pending", "http_500", "failed"),
        (Outcome.dead("bad input"), "dead", "permanent", "failed"),
        (Outcome.unconfirmed("no answer"), "dead", "external_outcome_unconfirmed", "failed"),
        (Outcome.released("shutdown"), "pending", None, "canceled"),
        (Outcome.success({"x": 1}), "succeeded", None, "succeeded"),
    ],
)
async def test_single_settlement_outcomes(
    driver: LedgerDriver,
    db: Database,
    clock: ManualClock,
    outcome: Outcome,
    status: str,
    code: str | None,
    attempt_status: str,
) -> None:
    job_id = await _insert(driver, db, clock)
    (claimed,) = await _claim(driver, db, clock)
    ok = await checked(
        db,
        T.SETTLE,
        in_tx(
            db,
            lambda c: driver.job_settle(
                c, claimed.fence, outcome, now=clock.now(), started_at=claimed.started_at
            ),
        ),
    )
    assert ok
    row = await job(db, job_id)
    assert (row["status"], row["last_error_code"], row["lease_token"]) == (status, code, None)
    assert row["attempts"] == (0 if outcome.error_code == "released" else 1)
    assert (await attempt_rows(db))[claimed.execution_id]["status"] == attempt_status
    if status == "pending" and outcome.error_code != "released":
        assert row["run_at"] == clock.now() + timedelta(seconds=30)  # L-5 backoff
    stale = await in_tx(
        db, lambda c: driver.job_settle(c, claimed.fence, Outcome.success(), now=clock.now())
    )
    assert stale is False


async def test_retry_budget_exhausted_goes_dead(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    job_id = await _insert(driver, db, clock)
    for attempt in range(1, 4):
        (claimed,) = await _claim(driver, db, clock)
        assert claimed.attempt == attempt
        await checked(
            db,
            T.SETTLE,
            driver.jobs_settle(db, [(claimed, Outcome.retry("boom"))], now=clock.now()),
        )
        _tick(clock, timedelta(hours=1))
    row = await job(db, job_id)
    assert (row["status"], row["last_error_code"]) == ("dead", "attempts_exhausted")


async def test_fencing_lock_renew_and_side_effect(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    await _insert(driver, db, clock)
    (claimed,) = await _claim(driver, db, clock, lease_ms=10_000)
    await in_tx(db, lambda c: driver.job_lock_fenced(c, claimed.fence, now=clock.now()))
    _tick(clock, timedelta(seconds=5))
    assert await driver.jobs_renew_leases(db, [claimed], now=clock.now(), lease_ms=10_000) == {
        claimed.id
    }
    assert (await job(db, claimed.id))["lease_until"] == clock.now() + timedelta(seconds=10)
    await driver.job_mark_side_effect(db, claimed.fence, now=clock.now())
    assert (await job(db, claimed.id))["side_effect_at"] == clock.now()
    assert (await attempt_rows(db))[claimed.execution_id]["side_effect_at"] == clock.now()
    bad = Fence(
        claimed.id, claimed.generation, "other-token", claimed.execution_id, claimed.started_at
    )
    with pytest.raises(LeaseLostError):
        await in_tx(db, lambda c: driver.job_lock_fenced(c, bad, now=clock.now()))
    with pytest.raises(LeaseLostError):
        await driver.job_mark_side_effect(db, bad, now=clock.now())
    _tick(clock, timedelta(milliseconds=CF_TYPE.execution_timeout_ms))  # deadline passed
    with pytest.raises(LeaseLostError):
        await in_tx(db, lambda c: driver.job_lock_fenced(c, claimed.fence, now=clock.now()))
    assert await driver.jobs_renew_leases(db, [claimed], now=clock.now(), lease_ms=10_000) == set()
    assert await driver.jobs_renew_leases(db, [], now=clock.now(), lease_ms=10_000) == set()


async def test_manual_retry_and_cancel(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    job_id = await _insert(driver, db, clock, payload={"a": 1})
    key = (await job(db, job_id))["operation_key"]
    with pytest.raises(InvalidStateError):
        await in_tx(db, lambda c: driver.job_retry(c, job_id, now=clock.now()))  # pending
    (claimed,) = await _claim(driver, db, clock)
    await checked(
        db,
        T.CANCEL,
        in_tx(db, lambda c: driver.job_cancel(c, job_id, now=clock.now(), reason="skip")),
    )
    row = await job(db, job_id)
    assert (row["status"], row["cancel_reason"], row["generation"], row["lease_token"]) == (
        "canceled",
        "skip",
        2,
        None,
    )
    assert (await attempt_rows(db))[claimed.execution_id]["status"] == "canceled"
    with pytest.raises(InvalidStateError):
        await in_tx(db, lambda c: driver.job_cancel(c, job_id, now=clock.now()))
    await checked(
        db,
        T.RETRY,
        in_tx(db, lambda c: driver.job_retry(c, job_id, now=clock.now(), payload={"a": 2})),
    )
    row = await job(db, job_id)
    assert (row["status"], row["attempts"], row["generation"], row["payload"]) == (
        "pending",
        0,
        3,
        {"a": 2},
    )
    assert row["operation_key"] != key
    with pytest.raises(NotFoundError):
        await in_tx(db, lambda c: driver.job_cancel(c, 999_999, now=clock.now()))
    await in_tx(db, lambda c: driver.jobs_mark_replay_batch(c, [job_id], "batch-1"))
    assert (await job(db, job_id))["replay_batch_id"] == "batch-1"
    await in_tx(db, lambda c: driver.jobs_mark_replay_batch(c, [job_id], None))
    assert (await job(db, job_id))["replay_batch_id"] is None


async def test_pause_resume_and_cancel_for_instance(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    waiting = await _insert(driver, db, clock, type=DELAY_WAKE, instance_id=7, delay_ms=60_000)
    running = await _insert(driver, db, clock, type=DELAY_WAKE, instance_id=7)
    unsafe = await _insert(driver, db, clock, type=EXTERNAL_DISPATCH, instance_id=7)
    other = await _insert(driver, db, clock, type=DELAY_WAKE, instance_id=8)
    (run_claim,) = await _claim(driver, db, clock, limit=1)
    (unsafe_claim,) = await _claim(driver, db, clock, pool=Pool.OUTBOUND.value)
    await driver.job_mark_side_effect(db, unsafe_claim.fence, now=clock.now())
    _tick(clock, timedelta(seconds=10))
    paused = await checked(
        db,
        T.PAUSE,
        in_tx(db, lambda c: driver.jobs_pause(c, 7, types=PAUSABLE_TYPES, now=clock.now())),
    )
    assert sorted(paused) == sorted([waiting, run_claim.id])
    rows = await job_rows(db)
    assert rows[waiting]["paused_remaining_ms"] == 50_000 and rows[running]["attempts"] == 0
    assert (rows[unsafe]["status"], rows[unsafe]["last_error_code"]) == (
        "dead",
        "external_outcome_unconfirmed",
    )
    assert rows[other]["status"] == "pending"
    _tick(clock, timedelta(minutes=5))
    resumed = await checked(
        db,
        T.RESUME,
        in_tx(db, lambda c: driver.jobs_resume(c, 7, types=PAUSABLE_TYPES, now=clock.now())),
    )
    assert sorted(resumed) == sorted([waiting, running])
    assert (await job(db, waiting))["run_at"] == clock.now() + timedelta(seconds=50)
    keep = await _insert(driver, db, clock, type=TASK_TIMEOUT, instance_id=7)
    canceled = await checked(
        db,
        T.CANCEL_FOR_INSTANCE,
        in_tx(
            db,
            lambda c: driver.jobs_cancel_for_instance(
                c, 7, types=CLEANUP_TYPES, now=clock.now(), keep_job_id=keep
            ),
        ),
    )
    assert sorted(canceled) == sorted([waiting, running])
    assert (await job(db, keep))["status"] == "pending"
    listed = await in_tx(
        db,
        lambda c: driver.jobs_cancel_advancement(
            c, 8, types=ADVANCEMENT_TYPES, now=clock.now(), reason="jump", dry_run=True
        ),
    )
    assert [item["jobId"] for item in listed] == [other] and (await job(db, other))[
        "status"
    ] == "pending"
    done = await checked(
        db,
        T.CANCEL_FOR_INSTANCE,
        in_tx(
            db,
            lambda c: driver.jobs_cancel_advancement(
                c, 8, types=ADVANCEMENT_TYPES, now=clock.now(), reason="jump"
            ),
        ),
    )
    assert [item["status"] for item in done] == ["pending"]
    assert (await job(db, other))["cancel_reason"] == "jump"


async def test_rescue_reclaim_and_wake(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    retried = await _insert(driver, db, clock)
    exhausted = await _insert(driver, db, clock, max_attempts=1)
    untouched = await _insert(driver, db, clock)
    claims = {c.id: c for c in await _claim(driver, db, clock, lease_ms=1_000, limit=3)}
    _tick(clock, timedelta(seconds=5))
    await driver.jobs_renew_leases(db, [claims[untouched]], now=clock.now(), lease_ms=60_000)
    report = await checked(
        db, T.RESCUE, in_tx(db, lambda c: driver.jobs_rescue(c, now=clock.now()))
    )
    assert report.retried == [retried] and report.dead == [exhausted]
    rows = await job_rows(db)
    assert (rows[retried]["status"], rows[retried]["last_error_code"]) == (
        "pending",
        "lease_expired",
    )
    assert rows[exhausted]["last_error_code"] == "attempts_exhausted"
    assert rows[untouched]["status"] == "running"
    assert (
        await driver.jobs_settle(db, [(claims[retried], Outcome.success())], now=clock.now())
    ) == set()
    _tick(clock, timedelta(minutes=2))
    targeted = await checked(
        db,
        T.RESCUE,
        in_tx(db, lambda c: driver.jobs_reclaim(c, [untouched, retried], now=clock.now())),
    )
    assert targeted.retried == [untouched] and targeted.hinted_pools == [LEDGER]
    woken = await in_tx(
        db, lambda c: driver.jobs_wake(c, [retried, untouched, exhausted], now=clock.now())
    )
    assert woken == [retried]  # untouched waits out its backoff; exhausted is dead
    assert await in_tx(db, lambda c: driver.jobs_wake(c, [], now=clock.now())) == []


async def test_receipts(driver: LedgerDriver, db: Database, clock: ManualClock) -> None:
    await _insert(driver, db, clock)
    (claimed,) = await _claim(driver, db, clock)
    await driver.job_mark_side_effect(db, claimed.fence, now=clock.now())
    assert await in_tx(db, lambda c: driver.receipt_get(c, claimed.operation_key, "s1")) == (
        False,
        None,
    )

    async def put(conn: AsyncConnection) -> None:
        await driver.job_lock_fenced(conn, claimed.fence, now=clock.now())
        await driver.receipt_put(
            conn,
            claimed.fence,
            claimed.operation_key,
            "s1",
            {"r": 1},
            now=clock.now(),
            confirm_side_effect=True,
        )

    await in_tx(db, put)
    assert await in_tx(db, lambda c: driver.receipt_get(c, claimed.operation_key, "s1")) == (
        True,
        {"r": 1},
    )
    assert (await job(db, claimed.id))["side_effect_at"] is None


async def test_lock_fenced_receipt(driver: LedgerDriver, db: Database, clock: ManualClock) -> None:
    """The fenced job lock and the receipt read in one call: (False, None)
    before the receipt commits, its result after (a JSON null result is still
    found), LeaseLostError for a stale fence or a passed deadline even when a
    receipt exists."""
    await _insert(driver, db, clock)
    (claimed,) = await _claim(driver, db, clock)
    key = claimed.operation_key

    def lock(fence: Fence, step: str):  # type: ignore[no-untyped-def]
        return in_tx(
            db, lambda c: driver.job_lock_fenced_receipt(c, fence, key, step, now=clock.now())
        )

    assert await lock(claimed.fence, "s1") == (False, None)

    async def put(conn: AsyncConnection) -> None:
        found = await driver.job_lock_fenced_receipt(
            conn, claimed.fence, key, "s1", now=clock.now()
        )
        assert found == (False, None)
        await driver.receipt_put(conn, claimed.fence, key, "s1", {"r": 1}, now=clock.now())
        await driver.receipt_put(conn, claimed.fence, key, "nothing", None, now=clock.now())

    await in_tx(db, put)
    if db.dialect == "postgresql":  # the job row is locked until the caller commits

        async def held(conn: AsyncConnection) -> None:
            await driver.job_lock_fenced_receipt(conn, claimed.fence, key, "s1", now=clock.now())
            async with db.read() as other:
                probe = select(jobs_table.c.id).where(jobs_table.c.id == claimed.id)
                free = await other.execute(probe.with_for_update(skip_locked=True))
                assert free.first() is None

        await in_tx(db, held)
    assert await lock(claimed.fence, "s1") == (True, {"r": 1})
    assert await lock(claimed.fence, "nothing") == (True, None)
    assert await lock(claimed.fence, "s2") == (False, None)
    for bad in (
        Fence(
            claimed.id, claimed.generation, "other-token", claimed.execution_id, claimed.started_at
        ),
        Fence(
            claimed.id,
            claimed.generation + 1,
            claimed.lease_token,
            claimed.execution_id,
            claimed.started_at,
        ),
    ):
        with pytest.raises(LeaseLostError):
            await lock(bad, "s1")
    _tick(clock, timedelta(milliseconds=CF_TYPE.execution_timeout_ms))  # deadline passed
    with pytest.raises(LeaseLostError):
        await lock(claimed.fence, "s1")
    await driver.jobs_settle(db, [(claimed, Outcome.success())], now=clock.now())


@pytest.mark.parametrize(
    ("outcome", "status", "attempt_status"),
    [
        (Outcome.success({"x": 1}), "succeeded", "succeeded"),
        (Outcome.skipped("already done"), "succeeded", "skipped"),
        (Outcome.retry("boom", code="http_500"), "pending", "failed"),
    ],
)
@pytest.mark.parametrize("confirm", [False, True], ids=["plain", "confirms-side-effect"])
async def test_receipt_put_and_settle(
    driver: LedgerDriver,
    db: Database,
    clock: ManualClock,
    outcome: Outcome,
    status: str,
    attempt_status: str,
    confirm: bool,
) -> None:
    """A step's receipt and its attempt's settlement in the step's fenced
    transaction (SPEC L-14): both commit, the attempt's duration recorded, a
    marked side effect confirmed when asked; a stale fence gets False (the
    caller rolls back) and settles nothing."""
    job_id = await _insert(driver, db, clock)
    (claimed,) = await _claim(driver, db, clock)
    key = claimed.operation_key
    if confirm:
        await driver.job_mark_side_effect(db, claimed.fence, now=clock.now())
    _tick(clock, timedelta(milliseconds=40))

    async def step(conn: AsyncConnection) -> bool:
        found = await driver.job_lock_fenced_receipt(
            conn, claimed.fence, key, "s1", now=clock.now()
        )
        assert found == (False, None)
        return await driver.receipt_put_and_settle(
            conn,
            claimed.fence,
            key,
            "s1",
            {"r": 1},
            outcome,
            now=clock.now(),
            started_at=claimed.started_at,
            confirm_side_effect=confirm,
        )

    assert await checked(db, T.SETTLE, in_tx(db, step))
    row = await job(db, job_id)
    assert (row["status"], row["lease_token"]) == (status, None)
    assert row["side_effect_at"] is None  # never marked, or confirmed by the step
    attempt = (await attempt_rows(db))[claimed.execution_id]
    assert (attempt["status"], attempt["duration_ms"]) == (attempt_status, 40)
    if status == "succeeded":
        assert row["result"] == outcome.result
    assert await in_tx(db, lambda c: driver.receipt_get(c, key, "s1")) == (True, {"r": 1})

    stale = Fence(
        claimed.id, claimed.generation, "other-token", claimed.execution_id, claimed.started_at
    )

    async def stale_step(conn: AsyncConnection) -> bool:
        return await driver.receipt_put_and_settle(
            conn, stale, key, "s2", {"r": 2}, Outcome.success(), now=clock.now()
        )

    assert await in_tx(db, stale_step) is False
    assert (await job(db, job_id))["status"] == status


async def test_purge_settled_jobs(driver: LedgerDriver, db: Database, clock: ManualClock) -> None:
    done = await _insert(driver, db, clock)
    kept = await _insert(driver, db, clock)
    (claimed, _) = await _claim(driver, db, clock)
    assert claimed.id == done
    await driver.jobs_settle(db, [(claimed, Outcome.success())], now=clock.now())
    _tick(clock, timedelta(days=40))
    before = clock.now() - timedelta(days=30)
    counts = await in_tx(db, lambda c: driver.jobs_purge_count(c, before=before))
    assert counts == {"workflow_jobs": 1, "workflow_job_executions": 1, "workflow_job_effects": 0}
    purge = await in_tx(db, lambda c: driver.jobs_purge_batch(c, before=before))
    assert purge.cursor is not None
    assert (purge.cursor[1], purge.jobs, purge.attempts) == (done, 1, 1)
    assert set(await job_rows(db)) == {kept}
    empty = await in_tx(db, lambda c: driver.jobs_purge_batch(c, before=before, after=purge.cursor))
    assert empty.cursor is None


async def test_nodes_and_leader(driver: LedgerDriver, db: Database, clock: ManualClock) -> None:
    node = NodeInfo("host:1:abcd", "host", 1, ["worker"], {LEDGER: 4})
    await in_tx(db, lambda c: driver.node_register(c, node, now=clock.now()))
    _tick(clock, timedelta(seconds=10))
    await in_tx(db, lambda c: driver.node_heartbeat(c, node.id, slots_in_use=3, now=clock.now()))
    await in_tx(db, lambda c: driver.node_stop(c, node.id, now=clock.now()))
    assert await in_tx(db, lambda c: driver.nodes_purge_count(c, before=clock.now())) == 0
    _tick(clock, timedelta(days=8))
    cutoff = clock.now() - timedelta(days=7)
    assert await in_tx(db, lambda c: driver.nodes_purge_count(c, before=cutoff)) == 1
    assert await in_tx(db, lambda c: driver.nodes_purge_batch(c, before=cutoff)) == 1
    ttl = timedelta(seconds=30)
    assert await in_tx(
        db, lambda c: driver.leader_acquire(c, "drain", "a", now=clock.now(), ttl=ttl)
    )
    assert not await in_tx(
        db, lambda c: driver.leader_acquire(c, "drain", "b", now=clock.now(), ttl=ttl)
    )
    assert await in_tx(
        db, lambda c: driver.leader_acquire(c, "drain", "a", now=clock.now(), ttl=ttl)
    )
    await in_tx(db, lambda c: driver.leader_release(c, "drain", "b"))  # not the holder: no effect
    assert not await in_tx(
        db, lambda c: driver.leader_acquire(c, "drain", "b", now=clock.now(), ttl=ttl)
    )
    await in_tx(db, lambda c: driver.leader_release(c, "drain", "a"))
    assert await in_tx(
        db, lambda c: driver.leader_acquire(c, "drain", "b", now=clock.now(), ttl=ttl)
    )
    _tick(clock, ttl * 2)  # an expired lease is taken over
    assert await in_tx(
        db, lambda c: driver.leader_acquire(c, "drain", "a", now=clock.now(), ttl=ttl)
    )
