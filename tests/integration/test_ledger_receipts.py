"""Step receipts (SPEC L-14, L-12, L-13, L-9, L-5).

Covers: ``run_step`` commits the business write and its receipt in one
transaction (L-14); a retry of the same job after a crash between the step
commit and the settlement reuses the receipt and does not run the step again
(L-14, L-12); a stale executor cannot write a receipt (L-9, L-13); a failing
step commits neither write; a manual retry with a changed payload gets a new
operationKey so receipts start afresh, one without a payload keeps it (L-12,
L-5).
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, func, insert, select
from sqlalchemy.exc import StatementError
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.errors import LeaseLostError
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.models import ClaimedJob, Outcome
from flowledger.ledger.receipts import run_step
from tests.integration.ledger_helpers import (
    add_job,
    claim_one,
    effect_rows,
    job_row,
    rescue,
    settle_single,
)
from tests.ledger_access import ledger_of

# A business table of the test's own, outside the ledger's metadata.
business_md = MetaData()
business = Table(
    "it_business_rows",
    business_md,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("job_id", Integer, nullable=False),
    Column("note", String(64), nullable=False),
)


@pytest.fixture
async def bdb(db: Database) -> Database:
    async with db.begin() as conn:
        await conn.run_sync(business_md.create_all)
    return db


class Step:
    """A step function that writes one business row and counts its calls."""

    def __init__(self, job_id: int, note: str = "created", fail: Exception | None = None) -> None:
        self.job_id, self.note, self.fail, self.calls = job_id, note, fail, 0

    async def __call__(self, conn: AsyncConnection) -> Any:
        self.calls += 1
        row_id = (
            await conn.execute(
                insert(business).values(job_id=self.job_id, note=self.note).returning(business.c.id)
            )
        ).scalar_one()
        if self.fail is not None:
            raise self.fail
        return {"row_id": int(row_id), "note": self.note}


async def _business_count(db: Database) -> int:
    async with db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(business))).scalar_one())


async def _step(
    db: Database, job: ClaimedJob, fn: Step, clock: ManualClock, key: str = "s1"
) -> Any:
    return await run_step(
        db, ledger_driver(db), job.fence, job.operation_key, key, fn, now=clock.now
    )


async def test_step_commits_business_write_and_receipt_together_L14(
    bdb: Database, clock: ManualClock
) -> None:
    job_id = await add_job(bdb, clock.now())
    job = await claim_one(bdb, clock.now())
    order: list[str] = []

    async def lock_instance(conn: AsyncConnection) -> None:
        order.append("instance")

    step = Step(job_id)

    async def fn(conn: AsyncConnection) -> Any:
        order.append("step")
        return await step(conn)

    key = job.operation_key
    result = await run_step(
        bdb,
        ledger_driver(bdb),
        job.fence,
        key,
        "create-child",
        fn,
        now=clock.now,
        lock_first=lock_instance,
    )
    assert order == ["instance", "step"]
    assert result == {"row_id": 1, "note": "created"}
    assert await _business_count(bdb) == 1
    (effect,) = await effect_rows(bdb)
    assert (effect.operation_key, effect.step_key, effect.job_id, effect.generation) == (
        job.operation_key, "create-child", job_id, 1,
    )  # fmt: skip
    assert (effect.result, effect.created_at) == (result, clock.now())
    async with bdb.read() as conn:
        assert await ledger_of(conn).receipt_get(conn, job.operation_key, "create-child") == (
            True,
            result,
        )
        assert await ledger_of(conn).receipt_get(conn, job.operation_key, "other") == (False, None)


async def test_receipt_insert_failure_rolls_back_business_write_L14(
    bdb: Database, clock: ManualClock
) -> None:
    job_id = await add_job(bdb, clock.now())
    job = await claim_one(bdb, clock.now())

    async def unserialisable(conn: AsyncConnection) -> Any:
        await conn.execute(insert(business).values(job_id=job_id, note="x"))
        return {"not-json": {1, 2}}  # the receipt cannot be written

    with pytest.raises((StatementError, TypeError)):
        await run_step(
            bdb,
            ledger_driver(bdb),
            job.fence,
            job.operation_key,
            "s1",
            unserialisable,
            now=clock.now,
        )
    assert await _business_count(bdb) == 0
    assert await effect_rows(bdb) == []


async def test_retry_after_crash_reuses_receipt_and_skips_step_L14_L12(
    bdb: Database, clock: ManualClock
) -> None:
    job_id = await add_job(bdb, clock.now())
    first = await claim_one(bdb, clock.now())
    step = Step(job_id)
    result = await _step(bdb, first, step, clock)
    assert step.calls == 1
    # crash: the executor never settles; its lease expires and the drain reclaims it
    clock.advance(seconds=61)
    assert (await rescue(bdb, clock.now())).retried == [job_id]
    clock.advance(seconds=30)
    second = await claim_one(bdb, clock.now())
    assert (second.id, second.attempt, second.generation) == (job_id, 2, 1)
    assert second.operation_key == first.operation_key
    again = await _step(bdb, second, step, clock)
    assert again == result
    assert step.calls == 1
    assert await _business_count(bdb) == 1
    assert len(await effect_rows(bdb)) == 1
    # a second step of the same operation is a separate receipt
    other = Step(job_id, note="notify")
    assert (await _step(bdb, second, other, clock, key="s2"))["note"] == "notify"
    assert await _business_count(bdb) == 2
    assert [e.step_key for e in await effect_rows(bdb, first.operation_key)] == ["s1", "s2"]
    assert await settle_single(bdb, second, Outcome.success(again), clock.now())


async def test_stale_executor_cannot_write_a_receipt_L9_L13(
    bdb: Database, clock: ManualClock
) -> None:
    job_id = await add_job(bdb, clock.now())
    old = await claim_one(bdb, clock.now())
    clock.advance(seconds=61)
    await rescue(bdb, clock.now())
    clock.advance(seconds=30)
    await claim_one(bdb, clock.now())  # another executor owns the job now
    step = Step(job_id)
    with pytest.raises(LeaseLostError):
        await _step(bdb, old, step, clock)
    assert step.calls == 0
    assert await _business_count(bdb) == 0
    assert await effect_rows(bdb) == []


async def test_canceled_job_executor_cannot_write_a_receipt_L9(
    bdb: Database, clock: ManualClock
) -> None:
    job_id = await add_job(bdb, clock.now())
    job = await claim_one(bdb, clock.now())
    async with bdb.begin() as conn:
        await ledger_of(conn).job_cancel(conn, job_id, now=clock.now())
    step = Step(job_id)
    with pytest.raises(LeaseLostError):
        await _step(bdb, job, step, clock)
    assert (step.calls, await _business_count(bdb), await effect_rows(bdb)) == (0, 0, [])


async def test_executor_past_deadline_cannot_write_a_receipt_L11(
    bdb: Database, clock: ManualClock
) -> None:
    job_id = await add_job(bdb, clock.now(), execution_timeout_ms=30_000)
    job = await claim_one(bdb, clock.now())
    clock.advance(seconds=30)
    step = Step(job_id)
    with pytest.raises(LeaseLostError):
        await _step(bdb, job, step, clock)
    assert (step.calls, await _business_count(bdb), await effect_rows(bdb)) == (0, 0, [])


async def test_failing_step_commits_nothing_L14(bdb: Database, clock: ManualClock) -> None:
    job_id = await add_job(bdb, clock.now())
    job = await claim_one(bdb, clock.now())
    failing = Step(job_id, fail=RuntimeError("downstream exploded"))
    with pytest.raises(RuntimeError, match="downstream exploded"):
        await _step(bdb, job, failing, clock)
    assert failing.calls == 1
    assert await _business_count(bdb) == 0
    assert await effect_rows(bdb) == []
    # the next try of the step really runs (no receipt was left behind)
    ok = Step(job_id)
    assert await _step(bdb, job, ok, clock) == {"row_id": ok_row_id(bdb), "note": "created"}
    assert ok.calls == 1
    assert await _business_count(bdb) == 1


def ok_row_id(db: Database) -> int:
    # SQLite reuses the rolled-back rowid; a PostgreSQL sequence does not roll back
    return 1 if db.is_sqlite else 2


async def _dead_job_after_step(
    db: Database, clock: ManualClock, payload: dict[str, Any]
) -> tuple[int, ClaimedJob, Step]:
    job_id = await add_job(db, clock.now(), payload=payload)
    job = await claim_one(db, clock.now())
    step = Step(job_id)
    await _step(db, job, step, clock)
    assert await settle_single(db, job, Outcome.dead("receiver rejected"), clock.now())
    return job_id, job, step


async def test_manual_retry_with_changed_payload_gets_new_operation_key_L12(
    bdb: Database, clock: ManualClock
) -> None:
    job_id, first, step = await _dead_job_after_step(bdb, clock, {"amount": 1})
    async with bdb.begin() as conn:
        await ledger_of(conn).job_retry(conn, job_id, now=clock.now(), payload={"amount": 2})
    row = await job_row(bdb, job_id)
    assert row.payload == {"amount": 2}
    assert row.operation_key != first.operation_key
    second = await claim_one(bdb, clock.now())
    assert (second.operation_key, second.payload) == (row.operation_key, {"amount": 2})
    await _step(bdb, second, step, clock)
    assert step.calls == 2  # receipts start afresh under the new key
    assert await _business_count(bdb) == 2
    assert [e.operation_key for e in await effect_rows(bdb)] == [
        first.operation_key, second.operation_key,
    ]  # fmt: skip
    assert [e.generation for e in await effect_rows(bdb)] == [1, 2]


@pytest.mark.parametrize("same_payload", [False, True])
async def test_manual_retry_without_payload_change_keeps_operation_key_L12(
    same_payload: bool, bdb: Database, clock: ManualClock
) -> None:
    job_id, first, step = await _dead_job_after_step(bdb, clock, {"amount": 1})
    async with bdb.begin() as conn:
        await ledger_of(conn).job_retry(
            conn, job_id, now=clock.now(), payload={"amount": 1} if same_payload else None
        )
    second = await claim_one(bdb, clock.now())
    assert second.generation == 2
    assert second.operation_key == first.operation_key
    assert second.trace_id == first.trace_id
    assert await _step(bdb, second, step, clock) == {"row_id": 1, "note": "created"}
    assert step.calls == 1  # the committed receipt is reused
    assert await _business_count(bdb) == 1
    assert len(await effect_rows(bdb)) == 1
