"""Job handlers used by the benchmarks (imported by worker processes with
``flowledger worker --import bench_handlers``, PYTHONPATH=bench)."""

from __future__ import annotations

import time
from typing import Any

from flowledger.ledger.types import JobType
from flowledger.states import Pool
from flowledger.worker import JobContext, job_handler

# the types as the bench process enqueues them
NOOP_LEDGER = JobType("bench_noop_ledger", Pool.LEDGER)
NOOP_OUTBOUND = JobType("bench_noop_outbound", Pool.OUTBOUND)
WAKE = JobType("bench_wake", Pool.LEDGER, priority=0)


@job_handler(NOOP_LEDGER)
async def noop_ledger(ctx: JobContext) -> None:
    return None


@job_handler(NOOP_OUTBOUND)
async def noop_outbound(ctx: JobContext) -> None:
    return None


@job_handler(WAKE)
async def wake(ctx: JobContext) -> dict[str, Any]:
    return {"started": time.time()}
