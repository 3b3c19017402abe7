"""Claims do not slow down with history (issue 34 item 4): the time of the
ledger's claim and success-settlement statements on PostgreSQL with no
history, then with ~1M terminal jobs and ~1M attempts spread over 30 days
(the partitioned attempts history of migration 0021: one partition per
day).

    python bench/claim_history.py [--server URL] [--history 1000000] [--rounds 1000]

Two fresh databases, ``flowledger_bench_claim_history_empty`` and
``…_full``, are created on the server (dropped first when they exist) and
migrated to head; the full one gets ``--history`` terminal jobs (98%
succeeded, 2% canceled) with one attempt each, spread over the last 30 days,
the day partitions of the last 31 days created first (``generate_series``,
not the API), then VACUUM ANALYZE. Both get the same pending jobs of the
``workflow-ledger`` pool. Then, alternating between the two databases so
both see the same machine load, ``rounds`` times (after 50 warm-ups): one
claim of one job (``jobs_claim``: the claim CTE with its attempt insert) and
its settlement (``jobs_settle``: the fenced success CTE, the attempt updated
in its partition), each timed as a client round trip through the pooled
``PostgresLedger``. Finally ``--explained`` claims and settlements per
database under ``EXPLAIN (ANALYZE, BUFFERS)``: the statements' own time in
the server (planning + execution) and the shared buffers they touched —
the figures that say whether the statements' cost grows with history,
without the client's and the shared machine's noise.

Prints round-trip medians and p95, server medians and buffers per
database; last line (server-side medians): ``claim_empty_ms=…
claim_full_ms=… settle_empty_ms=… settle_full_ms=… claim_ratio=…
settle_ratio=…`` (full ÷ empty).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
from sqlalchemy import make_url

from flowledger.db.database import Database
from flowledger.db.history_partitions import create_day_sql
from flowledger.db.migrate import upgrade
from flowledger.db.urls import libpq_conninfo
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.driver.postgres_sql import (
    CLAIM_SQL,
    SETTLE_SUCCESS_SQL,
    claim_params,
    settle_success_params,
)
from flowledger.ledger.models import JobSpec, Outcome, OutcomeKind
from flowledger.ledger.types import JobType

NAME = "flowledger_bench_claim_history"  # _empty and _full
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


def _recreate(server: str, name: str) -> str:
    with psycopg.connect(_server(server), autocommit=True) as admin:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'CREATE DATABASE "{name}"')
    return make_url(server).set(database=name).render_as_string(hide_password=False)


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


async def _enqueue(db: Database, n: int) -> None:
    async with db.begin() as conn:
        await ledger_driver(db).jobs_insert(
            conn, [JobSpec(type=BENCH_TYPE) for _ in range(n)], now=datetime.now(UTC)
        )


async def _round(db: Database) -> tuple[float, float]:
    """One claim and its settlement, each timed (ms, client round trip)."""
    ledger = ledger_driver(db)
    started = time.perf_counter()
    [job] = await ledger.jobs_claim(db, pool=POOL, limit=1, node_id="bench", now=datetime.now(UTC))
    claimed = time.perf_counter()
    settled = await ledger.jobs_settle(db, [(job, DONE)], now=datetime.now(UTC))
    done = time.perf_counter()
    assert settled == {job.id}
    return (claimed - started) * 1000, (done - claimed) * 1000


def _explained(plan: list[dict[str, Any]]) -> tuple[float, int]:
    """(planning + execution ms, shared buffers touched) of an EXPLAIN JSON."""
    top = plan[0]
    buffers = top["Plan"].get("Shared Hit Blocks", 0) + top["Plan"].get("Shared Read Blocks", 0)
    return top["Planning Time"] + top["Execution Time"], int(buffers)


def _server_side(url: str, n: int) -> tuple[list[tuple[float, int]], list[tuple[float, int]]]:
    """``n`` claims and settlements under EXPLAIN (ANALYZE, BUFFERS): the
    statements' own time in the server and the buffers they touched."""
    claims, settles = [], []
    with psycopg.connect(_server(url), autocommit=True) as conn:
        for _ in range(n):
            now = datetime.now(UTC)
            params = claim_params(pool=POOL, limit=1, node_id="explain", now=now, lease_ms=60_000)
            [[plan]] = conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + CLAIM_SQL["priority"], params
            ).fetchall()
            claims.append(_explained(plan))
            job = conn.execute(
                "SELECT j.id, j.generation, j.lease_token, e.id, e.started_at "
                "FROM workflow_jobs j JOIN workflow_job_executions e ON e.job_id = j.id "
                "AND e.status = 'running' WHERE j.status = 'running' AND j.lease_owner = 'explain'"
            ).fetchone()
            assert job is not None
            settle = settle_success_params(
                ids=[job[0]],
                gens=[job[1]],
                tokens=[job[2]],
                exec_ids=[job[3]],
                durations=[1],
                skipped=[False],
                results=[{"ok": True}],
                exec_starts=[job[4]],
                now=datetime.now(UTC),
            )
            [[plan]] = conn.execute(
                "EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) " + SETTLE_SUCCESS_SQL, settle
            ).fetchall()
            settles.append(_explained(plan))
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
    parser.add_argument("--explained", type=int, default=100)
    args = parser.parse_args()
    urls = {phase: _recreate(args.server, f"{NAME}_{phase}") for phase in ("empty", "full")}
    dbs = {phase: Database(url) for phase, url in urls.items()}
    client: dict[str, tuple[list[float], list[float]]] = {p: ([], []) for p in dbs}
    server: dict[str, tuple[list[tuple[float, int]], list[tuple[float, int]]]] = {}
    try:
        for db in dbs.values():
            await upgrade(db)
        fill_s = _fill(urls["full"], args.history)
        print(f"filled {args.history} terminal jobs and attempts in {fill_s:.1f} s", flush=True)
        for db in dbs.values():
            await _enqueue(db, args.rounds + WARMUP + args.explained)
        for i in range(args.rounds + WARMUP):  # alternating: both see the same machine load
            for phase, db in dbs.items():
                claim_ms, settle_ms = await _round(db)
                if i >= WARMUP:
                    client[phase][0].append(claim_ms)
                    client[phase][1].append(settle_ms)
        for phase, url in urls.items():
            server[phase] = _server_side(url, args.explained)
            print("{}: jobs={} attempts={} partitions={}".format(phase, *await _counts(dbs[phase])))
    finally:
        for db in dbs.values():
            await db.dispose()
    figures: dict[str, float] = {}
    for phase in dbs:
        claims, settles = client[phase]
        s_claims, s_settles = server[phase]
        claim_server = statistics.median(t for t, _ in s_claims)
        settle_server = statistics.median(t for t, _ in s_settles)
        figures[f"claim_{phase}"] = claim_server
        figures[f"settle_{phase}"] = settle_server
        print(
            f"{phase}: claim round trip median {statistics.median(claims):.3f} ms "
            f"p95 {_p95(claims):.3f} ms, in the server {claim_server:.3f} ms, "
            f"{statistics.median(b for _, b in s_claims):.0f} buffers; "
            f"settle round trip median {statistics.median(settles):.3f} ms "
            f"p95 {_p95(settles):.3f} ms, in the server {settle_server:.3f} ms, "
            f"{statistics.median(b for _, b in s_settles):.0f} buffers"
        )
    print(
        f"claim_empty_ms={figures['claim_empty']:.3f} claim_full_ms={figures['claim_full']:.3f} "
        f"settle_empty_ms={figures['settle_empty']:.3f} "
        f"settle_full_ms={figures['settle_full']:.3f} "
        f"claim_ratio={figures['claim_full'] / figures['claim_empty']:.2f} "
        f"settle_ratio={figures['settle_full'] / figures['settle_empty']:.2f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
