"""Ledger throughput and wake latency (issue: foundation and job ledger).

    python bench/ledger_throughput.py --db URL --jobs 20000 --workers 1

The database at URL is migrated and its ledger tables are EMPTIED first.
1. bulk-enqueue N no-op jobs split evenly across the two pools;
2. start K real `flowledger worker` processes (default pools: 4 + 4 slots)
   and wait until every job has succeeded; drain rate = N / (last attempt
   finished - first attempt started), so process start-up is not counted
   (the wall time including start-up is printed too);
3. with the workers idle, 200 times: enqueue one job, commit, and measure
   commit -> handler start (the handler records time.time()).
Machine-independent figures (issue 15 item 1): SQL statements and commits
per job of the drain (step 2), counted by SQLAlchemy event hooks in the
workers (``--import sql_counts``), and of the bulk enqueue; on PostgreSQL
also the server's own xact_commit delta over the drain (which includes this
script's polling).
``--idempotency-keys`` gives every enqueued job its own idempotencyKey;
``--enqueue-only`` stops after step 1 (the bulk enqueue's rate, statements
and commits; no workers started).
Last lines: enqueue_per_s=… drain_per_s=… wake_p50_ms=… wake_p95_ms=…, then
statements_per_job=… commits_per_job=…
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

from sqlalchemy import func, select, text

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_handlers  # noqa: E402,F401  (registers the bench job types)
import sql_counts  # noqa: E402
from flowledger.clock import SystemClock  # noqa: E402
from flowledger.db import wake  # noqa: E402
from flowledger.db.database import Database  # noqa: E402
from flowledger.db.migrate import upgrade  # noqa: E402
from flowledger.db.schema import workflow_job_executions as executions  # noqa: E402
from flowledger.db.schema import workflow_jobs as jobs  # noqa: E402
from flowledger.ledger.enqueue import enqueue, enqueue_many  # noqa: E402
from flowledger.ledger.models import JobSpec  # noqa: E402

CHUNK = 5000


async def reset(db: Database) -> None:
    await upgrade(db)
    async with db.begin() as conn:
        for table in (
            "workflow_job_effects",
            "workflow_job_executions",
            "workflow_jobs",
            "system_scheduler_nodes",
            "system_leader_leases",
        ):
            await conn.execute(text(f"DELETE FROM {table}"))


async def bulk_enqueue(db: Database, n: int, *, keyed: bool = False) -> float:
    clock = SystemClock()
    specs = [
        JobSpec(
            "bench_noop_ledger" if i % 2 == 0 else "bench_noop_outbound",
            idempotency_key=f"bench-{i}" if keyed else None,
        )
        for i in range(n)
    ]
    started = time.perf_counter()
    for offset in range(0, n, CHUNK):
        async with db.begin() as conn:
            await enqueue_many(conn, specs[offset : offset + CHUNK], now=clock.now())
    return n / (time.perf_counter() - started)


def start_workers(url: str, k: int, counts_dir: str) -> list[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "FLOWLEDGER_DATABASE_URL": url,
        sql_counts.ENV: counts_dir,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    return [
        subprocess.Popen(
            [
                sys.executable,
                "-m",
                "flowledger",
                "worker",
                "--import",
                "bench_handlers",
                "--import",
                "sql_counts",
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(k)
    ]


async def wait_drained(db: Database, n: int, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        async with db.read() as conn:
            done = (
                await conn.execute(
                    select(func.count()).select_from(jobs).where(jobs.c.status == "succeeded")
                )
            ).scalar_one()
        if done >= n:
            return
        await asyncio.sleep(0.2)
    raise SystemExit(f"timed out: {done}/{n} jobs succeeded")


async def drain_rate(db: Database, n: int) -> float:
    async with db.read() as conn:
        first, last = (
            await conn.execute(
                select(func.min(executions.c.started_at), func.max(executions.c.finished_at))
            )
        ).one()
    if isinstance(first, str):  # SQLite aggregates come back as text
        first, last = datetime.fromisoformat(first), datetime.fromisoformat(last)
    return n / (last - first).total_seconds()


async def wake_latencies(db: Database, samples: int) -> list[float]:
    clock = SystemClock()
    await asyncio.sleep(3.0)  # let the workers go idle (poll loops parked)
    latencies = []
    for _ in range(samples):
        async with db.engine.connect() as conn:
            trans = await conn.begin()
            wake.begin_tracking(conn)
            job = await enqueue(conn, JobSpec("bench_wake"), now=clock.now())
            t0 = time.time()
            await trans.commit()
        while True:
            async with db.read() as conn:
                row = (
                    await conn.execute(
                        select(jobs.c.status, jobs.c.result).where(jobs.c.id == job.job_id)
                    )
                ).one()
            if row.status == "succeeded":
                latencies.append((row.result["started"] - t0) * 1000)
                break
            await asyncio.sleep(0.002)
        await asyncio.sleep(0.02)
    return latencies


async def xact_commit(db: Database) -> int | None:
    """The server's committed-transaction counter of this database (PostgreSQL)."""
    if db.is_sqlite:
        return None
    async with db.read() as conn:
        query = "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        return int((await conn.execute(text(query))).scalar_one())


def percentile(values: list[float], q: float) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="database URL (its ledger is emptied)")
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--wake-samples", type=int, default=200)
    parser.add_argument(
        "--idempotency-keys", action="store_true", help="give every enqueued job its own key"
    )
    parser.add_argument(
        "--enqueue-only", action="store_true", help="measure the bulk enqueue only (step 1)"
    )
    args = parser.parse_args()

    db = Database(args.db)
    await reset(db)
    sql_counts.watch(db.engine.sync_engine)
    enqueue_per_s = await bulk_enqueue(db, args.jobs, keyed=args.idempotency_keys)
    enqueue_counts = sql_counts.Counts(sql_counts.TOTALS.statements, sql_counts.TOTALS.commits)
    print(f"enqueued {args.jobs} jobs at {enqueue_per_s:.0f}/s", flush=True)
    if args.enqueue_only:
        await db.dispose()
        print(
            f"enqueue_per_s={enqueue_per_s:.1f} enqueue_statements={enqueue_counts.statements} "
            f"enqueue_commits={enqueue_counts.commits}"
        )
        return
    counts_dir = tempfile.mkdtemp(prefix="flowledger-bench-counts-")
    commits_before = await xact_commit(db)
    wall_start = time.perf_counter()
    workers = start_workers(args.db, args.workers, counts_dir)
    try:
        await wait_drained(db, args.jobs, timeout_s=max(120.0, args.jobs / 100))
        wall = time.perf_counter() - wall_start
        drain_counts = sql_counts.snapshot(counts_dir, [proc.pid for proc in workers])
        commits_after = await xact_commit(db)
        drain_per_s = await drain_rate(db, args.jobs)
        print(
            f"drained {args.jobs} jobs with {args.workers} worker process(es): "
            f"{drain_per_s:.0f}/s (wall time incl. process start-up {wall:.2f}s)",
            flush=True,
        )
        latencies = await wake_latencies(db, args.wake_samples)
    finally:
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
        for proc in workers:
            proc.wait(timeout=60)
        await db.dispose()
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    print(
        f"wake latency over {len(latencies)} samples: p50 {p50:.2f} ms, p95 {p95:.2f} ms, "
        f"max {max(latencies):.2f} ms"
    )
    print(
        f"enqueue_per_s={enqueue_per_s:.1f} drain_per_s={drain_per_s:.1f} "
        f"wake_p50_ms={p50:.2f} wake_p95_ms={p95:.2f}"
    )
    server = ""
    if commits_before is not None and commits_after is not None:
        server = f" pg_xact_commit_per_job={(commits_after - commits_before) / args.jobs:.2f}"
    print(
        sql_counts.per(drain_counts, args.jobs, "job")
        + server
        + f" enqueue_statements={enqueue_counts.statements}"
        + f" enqueue_commits={enqueue_counts.commits}"
    )


if __name__ == "__main__":
    asyncio.run(main())
