"""Step receipts through the worker's ``ctx.step`` (SPEC L-14, L-12, L-5).

Covers: a step commits its business row and its receipt together; a handler
that fails after the step is retried after the backoff and the retry reuses
the committed receipt — the step function runs once, there is one business
row and one receipt, and the job's result carries the reused value (L-14,
L-12); a step that fails commits neither write.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, func, insert, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import workflow_job_effects as effects
from flowledger.worker.context import JobContext
from tests.integration.ledger_helpers import attempt_rows, effect_rows, job_row
from tests.integration.worker_helpers import add_scripted, running_worker, wait_job

business_md = MetaData()
business = Table(
    "wt_business_rows",
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


async def business_rows(db: Database) -> list[Any]:
    async with db.read() as conn:
        return list((await conn.execute(select(business).order_by(business.c.id))).all())


async def count(db: Database, table: Any) -> int:
    async with db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(table))).scalar_one())


async def test_retry_reuses_the_step_receipt_L14(bdb: Database, clock: ManualClock) -> None:
    db = bdb
    calls = {"handler": 0, "step": 0}

    async def handler(ctx: JobContext) -> Any:
        calls["handler"] += 1

        async def write(conn: AsyncConnection) -> Any:
            calls["step"] += 1
            stmt = insert(business).values(job_id=ctx.job.id, note="invoice")
            row_id = (await conn.execute(stmt.returning(business.c.id))).scalar_one()
            return {"row_id": row_id}

        created = await ctx.step("create-invoice", write)
        if calls["handler"] == 1:
            raise RuntimeError("crashed after the step")
        return {"created": created}

    async with running_worker(db, clock) as run:
        job_id = await add_scripted(db, clock, handler)
        first = await wait_job(db, job_id, "pending")
        assert (first.attempts, first.last_error_code) == (1, "RuntimeError")
        assert first.run_at == clock.now() + timedelta(seconds=30)
        (row,) = await business_rows(db)
        (receipt,) = await effect_rows(db, first.operation_key)
        assert (receipt.step_key, receipt.job_id, receipt.result) == (
            "create-invoice", job_id, {"row_id": row.id},
        )  # fmt: skip
        clock.advance(seconds=30)
        run.worker.db.hub.signal(None)
        done = await wait_job(db, job_id, "succeeded")
    assert calls == {"handler": 2, "step": 1}
    assert [(r.id, r.job_id) for r in await business_rows(db)] == [(row.id, job_id)]
    assert await count(db, effects) == 1
    assert done.result == {"created": {"row_id": row.id}}
    assert done.operation_key == first.operation_key
    assert [a.status for a in await attempt_rows(db, job_id)] == ["failed", "succeeded"]


async def test_a_failing_step_commits_nothing_L14(bdb: Database, clock: ManualClock) -> None:
    db = bdb

    async def handler(ctx: JobContext) -> Any:
        async def write(conn: AsyncConnection) -> Any:
            await conn.execute(insert(business).values(job_id=ctx.job.id, note="half"))
            raise ValueError("validation failed inside the step")

        return await ctx.step("create-invoice", write)

    async with running_worker(db, clock):
        job_id = await add_scripted(db, clock, handler)
        row = await wait_job(db, job_id, "pending")
    assert (row.last_error_code, row.last_error) == (
        "ValueError", "ValueError: validation failed inside the step",
    )  # fmt: skip
    assert await business_rows(db) == []
    assert await count(db, effects) == 0
    assert (await job_row(db, job_id)).attempts == 1
