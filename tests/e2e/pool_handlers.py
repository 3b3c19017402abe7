"""Job handlers for the user-pool end-to-end test (issue 15 item 5).

Loaded by real worker processes with ``flowledger worker --import
pool_handlers`` (``tests/e2e`` on PYTHONPATH). Two of the types name user
pools (``reports``, ``emails``), so the worker must have them declared —
in ``FLOWLEDGER_POOLS`` or by ``--pool`` — before this module is imported;
otherwise the import fails with "unknown pool". The test process registers
the same types itself (it never imports this module).

Each handler answers the wall-clock interval it ran in (the worker and the
test share one machine), so the test can see which jobs overlapped.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from flowledger.worker import JobContext, job_handler

REPORT, TICK, EMAIL = "pool_report", "pool_tick", "pool_email"


async def _timed(seconds: float) -> dict[str, Any]:
    started = time.time()
    await asyncio.sleep(seconds)
    return {"started": started, "ended": time.time()}


@job_handler(REPORT, pool="reports")
async def report(ctx: JobContext) -> dict[str, Any]:
    return await _timed(0.25)


@job_handler(TICK)  # the built-in workflow-ledger pool
async def tick(ctx: JobContext) -> dict[str, Any]:
    return await _timed(0.05)


@job_handler(EMAIL, pool="emails")
async def email(ctx: JobContext) -> dict[str, Any]:
    return await _timed(0.0)
