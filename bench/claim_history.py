"""Claims do not slow down with history (issue 34 item 4): the time of the
ledger's claim and success-settlement statements on PostgreSQL with no
history, then with ~1M terminal jobs and ~1M attempts spread over 30 days
(the partitioned attempts history of migration 0021: one partition per
day).

    python bench/claim_history.py [--server URL] [--history 1000000] [--rounds 1000]

A fresh database ``flowledger_bench_claim_history`` is created on the
server (dropped first when it exists) and migrated to head. Each phase
enqueues ``rounds`` + 50 pending jobs of the ``workflow-ledger`` pool, then
runs ``rounds`` times (after 50 warm-ups): one claim of one job
(``jobs_claim``: the claim CTE, its attempt row inserted) and the settlement
of that job (``jobs_settle``: the fenced success CTE, its attempt row
updated in its partition), each timed on its own (a round trip through the
pooled ``PostgresLedger``). The history is filled with ``generate_series``
(not the API), the day partitions of the last 31 days created first, then
VACUUM ANALYZE.

Prints the median and p95 of each statement per phase; last line:
``claim_empty_ms=… claim_full_ms=… settle_empty_ms=… settle_full_ms=…
claim_ratio=… settle_ratio=…`` (full ÷ empty, medians).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, datetime, timedelta

import psycopg
from sqlalchemy import make_url

from flowledger.db.database import Database
from flowledger.db.history_partitions import create_day_sql
from flowledger.db.migrate import upgrade
from flowledger.db.urls import libpq_conninfo
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.models import JobSpec, Outcome, OutcomeKind
from flowledger.ledger.types import JobType

NAME = "flowledger_bench_claim_history"
WARMUP = 50
POOL = "workflow-ledger"
BENCH_TYPE = JobType("bench_claim_history", POOL, max_attempts=3)
DONE = Outcome(OutcomeKind.SUCCESS, result={"ok": True})

FILL_JOBS = """
INSERT INTO workflow_jobs (type, pool, status, payload, tenant_id, priority, run_at, attempts,
    max_attempts, generation, execution_timeout_ms, operation_key, trace_id, created_at,
    updated_at, result)
SELECT 'delay_wake', %(pool)s, CASE WHEN g %% 50 = 0 THEN 'canceled' ELSE 'succeeded' END,
    '{}'::jsonb, 'tenant-' || (g %% 4), 100, t, 1, 5, 1, 600000, 'op-h' || g, 'tr-h' || g,
    t, t + interval '2 seconds', '{"ok": true}'::jsonb
FROM (SELECT g, now() - (g %% 30) * interval '1 day' - (g %% 86000) * interval '1 second' AS t
      FROM generate_series(1, %(n)s) AS g) AS s
"""
FILL_ATTEMPTS = """
INSERT INTO workflow_job_executions (job_id, generation, attempt, status, node_id, scheduled_at,
    started_at, finished_at, duration_ms)
SELECT id, 1, 1, 'succeeded', 'bench', run_at, run_at + interval '1 second',
    run_at + interval '2 seconds', 1000
FROM workflow_jobs WHERE node_key IS NULL AND operation_key LIKE 'op-h%%'
"""


def _server(url: str) -> str:
    return libpq_conninfo(make_url(url))


def _recreate(server: str) -> str:
    with psycopg.connect(_server(server), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{NAME}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{NAME}"')
    return make_url(server).set(database=NAME).render_as_string(hide_password=False)


def _fill(url: str, n: int) -> float:
    started = time.monotonic()
    today = datetime.now(UTC).date()
    with psycopg.connect(_server(url), autocommit=True) as conn:
        for offset in range(31, 0, -1):
            conn.execute(create_day_sql(today - timedelta(days=offset)))
        conn.execute(FILL_JOBS, {"pool": POOL, "n": n})
        conn.execute(FILL_ATTEMPTS)
        conn.execute("VACUUM ANALYZE workflow_jobs")
        conn.execute("VACUUM ANALYZE workflow_job_executions")
    return time.monotonic() - started


async def _phase(db: Database, rounds: int) -> tuple[list[float], list[float]]:
    ledger = ledger_driver(db)
    now = datetime.now(UTC)
    async with db.begin() as conn:
        await ledger.jobs_insert(
            conn, [JobSpec(type=BENCH_TYPE) for _ in range(rounds + WARMUP)], now=now
        )
    claims: list[float] = []
    settles: list[float] = []
    for i in range(rounds + WARMUP):
        started = time.perf_counter()
        [job] = await ledger.jobs_claim(
            db, pool=POOL, limit=1, node_id="bench", now=datetime.now(UTC)
        )
        claimed = time.perf_counter()
        settled = await ledger.jobs_settle(db, [(job, DONE)], now=datetime.now(UTC))
        done = time.perf_counter()
        assert settled == {job.id}
        if i >= WARMUP:
            claims.append((claimed - started) * 1000)
            settles.append((done - claimed) * 1000)
    return claims, settles


def _p95(values: list[float]) -> float:
    return sorted(values)[int(len(values) * 0.95) - 1]


async def _counts(db: Database) -> tuple[int, int, int]:
    async with db.read() as conn:
        row = (
            await conn.exec_driver_sql(
                "SELECT (SELECT count(*) FROM workflow_jobs), "
                "(SELECT count(*) FROM workflow_job_executions), "
                "(SELECT count(*) FROM pg_inherits "
                " WHERE inhparent = 'workflow_job_executions'::regclass)"
            )
        ).one()
    return int(row[0]), int(row[1]), int(row[2])


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--server", default="postgresql+psycopg://postgres@127.0.0.1:5432/postgres")
    parser.add_argument("--history", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=1000)
    args = parser.parse_args()
    url = _recreate(args.server)
    db = Database(url)
    await upgrade(db)
    results: dict[str, tuple[list[float], list[float]]] = {}
    try:
        results["empty"] = await _phase(db, args.rounds)
        print("empty: jobs={} attempts={} partitions={}".format(*await _counts(db)), flush=True)
        fill_s = _fill(url, args.history)
        print(f"filled {args.history} terminal jobs and attempts in {fill_s:.1f} s", flush=True)
        results["full"] = await _phase(db, args.rounds)
        print("full: jobs={} attempts={} partitions={}".format(*await _counts(db)), flush=True)
    finally:
        await db.dispose()
    medians: dict[str, float] = {}
    for phase, (claims, settles) in results.items():
        medians[f"claim_{phase}"] = statistics.median(claims)
        medians[f"settle_{phase}"] = statistics.median(settles)
        print(
            f"{phase}: claim median {statistics.median(claims):.3f} ms p95 {_p95(claims):.3f} ms; "
            f"settle median {statistics.median(settles):.3f} ms p95 {_p95(settles):.3f} ms"
        )
    print(
        f"claim_empty_ms={medians['claim_empty']:.3f} claim_full_ms={medians['claim_full']:.3f} "
        f"settle_empty_ms={medians['settle_empty']:.3f} "
        f"settle_full_ms={medians['settle_full']:.3f} "
        f"claim_ratio={medians['claim_full'] / medians['claim_empty']:.2f} "
        f"settle_ratio={medians['settle_full'] / medians['settle_empty']:.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
