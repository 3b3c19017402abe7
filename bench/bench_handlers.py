"""Job handlers used by the benchmarks (imported by worker processes with
``flowledger worker --import bench_handlers``, PYTHONPATH=bench)."""

from __future__ import annotations

import time
from typing import Any

from flowledger.states import Pool
from flowledger.worker import JobContext, job_handler


@job_handler("bench_noop_ledger", pool=Pool.LEDGER)
async def noop_ledger(ctx: JobContext) -> None:
    return None


@job_handler("bench_noop_outbound", pool=Pool.OUTBOUND)
async def noop_outbound(ctx: JobContext) -> None:
    return None


@job_handler("bench_wake", pool=Pool.LEDGER, priority=0)
async def wake(ctx: JobContext) -> dict[str, Any]:
    return {"started": time.time()}
