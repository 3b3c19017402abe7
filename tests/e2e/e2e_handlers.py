"""Job handlers for the worker end-to-end test (SPEC L-10, L-14, L-20).

Loaded by real worker processes with ``flowledger worker --import
e2e_handlers`` (``tests/e2e`` on PYTHONPATH) and by the test process itself,
so the job type is registered on both sides.

The handler is slow enough (about 30 ms) that a worker always has jobs in
flight when it is killed, and writes exactly one row into ``e2e_rows`` (which
has no unique constraint, so a second write for a job would show) through a
step receipt: a retry after the kill reuses the receipt instead of writing
again. The test creates the table.
"""

from __future__ import annotations

import asyncio
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.ledger.types import JobType
from flowledger.states import Pool
from flowledger.worker import JobContext, job_handler

JOB_TYPE = "e2e_write_row"
WRITE_ROW = JobType(JOB_TYPE, Pool.LEDGER, max_attempts=5)  # as the test process enqueues it


@job_handler(WRITE_ROW)
async def write_row(ctx: JobContext) -> Any:
    await asyncio.sleep(0.01)

    async def insert(conn: AsyncConnection) -> Any:
        result = await conn.execute(
            text("INSERT INTO e2e_rows (job_id, created_at) VALUES (:job_id, now()) RETURNING id"),
            {"job_id": ctx.job.id},
        )
        return {"row_id": result.scalar_one()}

    written = await ctx.step("write-row", insert)
    await asyncio.sleep(0.02)  # a kill here leaves a committed step unsettled
    return written
