"""Job handlers of the chaos test (issue 17), loaded by real worker
processes (``flowledger worker --import chaos_handlers``) and by the test.

- ``chaos_internal``: one business row in ``chaos_rows`` through a step
  receipt (an internal effect: exactly once however often it is killed);
- ``chaos_unsafe``: an unsafe external write — the side-effect marker, a
  POST to the test's receiver (``CHAOS_RECEIVER``), then a step recording
  the send (which clears the marker); a retry that finds that step's receipt
  returns it without sending, as the real outbound handlers do. A kill between marker and record
  dead-letters the job (outcome unknown) instead of sending again.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import httpx
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.ledger.types import JobType
from flowledger.states import Pool
from flowledger.worker import JobContext, job_handler

INTERNAL = "chaos_internal"
UNSAFE = "chaos_unsafe"
# the types as the test process enqueues them (it imports this module, not its worker)
INTERNAL_TYPE = JobType(INTERNAL, Pool.LEDGER, max_attempts=8)
UNSAFE_TYPE = JobType(UNSAFE, Pool.LEDGER, max_attempts=8)


@job_handler(INTERNAL_TYPE)
async def internal(ctx: JobContext) -> Any:
    await asyncio.sleep(0.1)  # long enough that the kills land mid-work

    async def insert(conn: AsyncConnection) -> Any:
        result = await conn.execute(
            text("INSERT INTO chaos_rows (job_id) VALUES (:job_id) RETURNING id"),
            {"job_id": ctx.job.id},
        )
        return {"row": result.scalar_one()}

    written = await ctx.step("write-row", insert)
    await asyncio.sleep(0.02)  # a kill here leaves a committed step unsettled
    return written


@job_handler(UNSAFE_TYPE)
async def unsafe(ctx: JobContext) -> Any:
    # as the real outbound handlers do: a send already recorded (the job was
    # killed, or the database went away, between the record and the
    # settlement) is not sent again — the receipt is the result (L-14, L-17)
    async with ctx.db.read() as conn:
        found, recorded = await ctx.ledger.receipt_get(conn, ctx.job.operation_key, "record-send")
    if found:
        return recorded
    await ctx.mark_side_effect()
    async with httpx.AsyncClient(timeout=5) as client:
        response = await client.post(os.environ["CHAOS_RECEIVER"], json={"job": ctx.job.id})
    await asyncio.sleep(0.02)  # a kill here: sent, not recorded -> dead, never resent

    async def record(conn: AsyncConnection) -> Any:
        await conn.execute(
            text("INSERT INTO chaos_sends (job_id, status) VALUES (:job_id, :status)"),
            {"job_id": ctx.job.id, "status": response.status_code},
        )
        return {"status": response.status_code}

    return await ctx.step("record-send", record)
