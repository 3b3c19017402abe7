"""One alert evaluator pass and one /metrics scrape over a filled ledger
(SPEC O-22; the issue's bar: an evaluator pass under 200 ms).

    python bench/alerts_evaluate.py --db URL --jobs 1000000

The database at URL is migrated and its ledger and alert tables are EMPTIED
first, then filled as ``bench/ops_queries.py`` fills it (N jobs, 3 x N
attempts over 30 days, four tenants, a few nodes). 20 alert rules: each of
the four job metrics for each of the four tenants and for the whole engine.
Times ``evaluate_once`` (20 passes after 2 warm-ups; the first pass fires
and enqueues the notifications) and ``GET /metrics`` in-process (httpx over
ASGITransport). Last line: ``evaluate_ms=… metrics_ms=…`` (medians).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

import httpx
from sqlalchemy import text

from flowledger.api import create_app
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.ledger.driver import ledger_driver
from flowledger.ops.alerts.evaluator import evaluate_once
from flowledger.ops.alerts.rules import RuleFields, create_rule
from ops_queries import fill, reset

CALLS = 20
WARMUP = 2
TENANTS = ["acme", "globex", "initech", "umbrella", None]
RULES = [  # metric, comparison, threshold
    ("queue_backlog", "gt", 1000),
    ("dead_letters", "gt", 10),
    ("job_failure_rate", "gte", 20),
    ("stuck_jobs", "gt", 0),
]


async def _timed(name: str, fn: Callable[[], Awaitable[Any]]) -> float:
    samples = []
    for i in range(WARMUP + CALLS):
        t0 = time.perf_counter()
        await fn()
        if i >= WARMUP:
            samples.append((time.perf_counter() - t0) * 1000)
    median = statistics.median(samples)
    print(f"{name}: median {median:.1f} ms, max {max(samples):.1f} ms")
    return median


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="database URL (its ledger is emptied)")
    parser.add_argument("--jobs", type=int, default=100_000)
    args = parser.parse_args()

    db = Database(args.db)
    now = datetime.now(UTC)
    await reset(db)
    async with db.begin() as conn:
        for table in ("workflow_alert_events", "workflow_alert_silences", "workflow_alert_rules"):
            await conn.execute(text(f"DELETE FROM {table}"))
    t0 = time.perf_counter()
    await fill(db, args.jobs, now)
    print(f"filled {args.jobs} jobs, {3 * args.jobs} attempts in {time.perf_counter() - t0:.1f} s")
    async with db.begin() as conn:
        for tenant in TENANTS:
            for metric, comparison, threshold in RULES:
                fields = RuleFields(f"{metric} {tenant}", metric, comparison, threshold, 0)
                await create_rule(conn, tenant=tenant, fields=fields, actor="bench", now=now)
    clock = ManualClock(now)
    first = await evaluate_once(db, clock, ledger=ledger_driver(db))
    print(f"first pass: {first.evaluated} rules, {len(first.fired)} fired")
    evaluate_ms = await _timed(
        "evaluate_once", lambda: evaluate_once(db, clock, ledger=ledger_driver(db))
    )
    transport = httpx.ASGITransport(app=create_app(db, engine=Engine(db, clock)))
    async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:

        async def scrape() -> None:
            (await client.get("/metrics")).raise_for_status()

        metrics_ms = await _timed("GET /metrics", scrape)
    await db.dispose()
    print(f"evaluate_ms={evaluate_ms:.1f} metrics_ms={metrics_ms:.1f}")


if __name__ == "__main__":
    asyncio.run(main())
