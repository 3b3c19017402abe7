"""Ledger throughput and wake latency (issue 15 items 1, 3, 4).

    python bench/ledger_throughput.py --db URL --jobs 20000 [--protocol peer|span]
                                      [--in-process] [--workers K]

The database at URL is migrated and its ledger tables are EMPTIED first
(on PostgreSQL by TRUNCATE … CASCADE, which empties the tables referencing
them too, so a reused database measures like a fresh one).
1. bulk-enqueue N no-op jobs split evenly across the two pools (the default
   pools have 4 + 4 slots: total concurrency 8 per worker process; with
   ``--one-pool`` all in the ledger pool, given 8 slots — one queue at
   concurrency 8, as a peer's single queue runs);
2. drain them. ``--protocol peer`` (the default; the protocol of the peer
   comparison, issue 15 item 3): the clock starts before the worker starts
   (its start-up is inside the timed window) and stops when the database
   shows every job succeeded (polled over a raw driver connection, so the
   poll is not counted below; adaptively — a quarter of the time the rate
   so far says is left, 5 to 250 ms — so the poll's own reads do not slow
   the drain); drain rate = N / that
   time. ``--protocol span`` (the earlier measurement): N / (first attempt
   started - last attempt finished), start-up not counted. Both figures are
   printed; the last line's ``drain_per_s`` is the chosen protocol's;
3. with the workers idle, 200 times: enqueue one job, commit, and measure
   commit -> handler start (the handler records time.time()).
The worker is K real `flowledger worker` processes (default 1), or with
``--in-process`` one worker inside this process, built as the CLI builds it
(``build_runtime``) — the embedded use: its wake hints then reach the pools
through the in-process hub (step 3 enqueues through the worker's own
``Database``), not through another process's LISTEN or ``data_version`` poll.
Machine-independent figures (issue 15 item 1): SQL statements and commits
per job of the drain (step 2), counted by SQLAlchemy event hooks in the
worker (``--import sql_counts``; in-process the same hooks), the worker's
CPU time per job, and the bulk enqueue's statements; on PostgreSQL also the
server's own xact_commit delta over the drain. On Linux,
``drain_machine_cpu_us_per_job``: the whole machine's busy CPU over the peer
window (the worker's start-up, its jobs, PostgreSQL's backends, this
script's polling; ``bench/machine_cpu.py``) per job, to set beside the
ceiling's ``ceiling_machine_cpu_us_per_job`` (issue 32 item 1).
``--idempotency-keys`` gives every enqueued job its own idempotencyKey;
``--enqueue-only`` stops after step 1; ``--no-counts`` starts the workers
without the counting hooks (to run an older checkout, PYTHONPATH=its src).
Last lines: enqueue_per_s=… drain_per_s=… span_drain_per_s=… start_up_s=…
wake_p50_ms=… wake_p95_ms=…, then
statements_per_job=… commits_per_job=… worker_cpu_ms_per_job=…
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import psycopg
from sqlalchemy import func, select, text

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bench_handlers  # noqa: E402  (the bench job types)
import machine_cpu  # noqa: E402
import sql_counts  # noqa: E402
from flowledger.clock import SystemClock  # noqa: E402
from flowledger.db import wake  # noqa: E402
from flowledger.db.database import Database  # noqa: E402
from flowledger.db.migrate import upgrade  # noqa: E402
from flowledger.db.schema import workflow_job_executions as executions  # noqa: E402
from flowledger.db.schema import workflow_jobs as jobs  # noqa: E402
from flowledger.db.urls import libpq_conninfo  # noqa: E402
from flowledger.ledger.driver import ledger_driver  # noqa: E402
from flowledger.ledger.models import JobSpec  # noqa: E402

CHUNK = 5000
POLL_MIN_S = 0.005  # the end of the drain is seen within this (or a quarter of the last stretch)
POLL_MAX_S = 0.25
DONE_SQL = "SELECT count(*) FROM workflow_jobs WHERE status = 'succeeded'"


LEDGER_TABLES = (
    "workflow_job_effects",
    "workflow_job_executions",
    "workflow_jobs",
    "system_scheduler_nodes",
    "system_leader_leases",
)


async def reset(db: Database) -> None:
    """Migrate and empty the ledger's tables. On PostgreSQL by TRUNCATE: a
    DELETE leaves the last run's dead rows and index entries behind, and a
    run on a reused database then measured its predecessors' bloat (the
    pgbench ceiling always runs on a fresh database)."""
    await upgrade(db)
    async with db.begin() as conn:
        if db.is_sqlite:
            for table in LEDGER_TABLES:
                await conn.execute(text(f"DELETE FROM {table}"))
        else:
            await conn.execute(text(f"TRUNCATE {', '.join(LEDGER_TABLES)} CASCADE"))


async def bulk_enqueue(
    db: Database, n: int, *, keyed: bool = False, one_pool: bool = False
) -> float:
    clock = SystemClock()
    specs = [
        JobSpec(
            bench_handlers.NOOP_LEDGER if one_pool or i % 2 == 0 else bench_handlers.NOOP_OUTBOUND,
            idempotency_key=f"bench-{i}" if keyed else None,
        )
        for i in range(n)
    ]
    ledger = ledger_driver(db)
    started = time.perf_counter()
    for offset in range(0, n, CHUNK):
        async with db.begin() as conn:
            await ledger.jobs_insert(conn, specs[offset : offset + CHUNK], now=clock.now())
    return n / (time.perf_counter() - started)


def start_workers(
    url: str, k: int, counts_dir: str, *, counted: bool = True
) -> list[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "FLOWLEDGER_DATABASE_URL": url,
        sql_counts.ENV: counts_dir,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    imports = ["--import", "bench_handlers"] + (["--import", "sql_counts"] if counted else [])
    return [
        subprocess.Popen(
            [sys.executable, "-m", "flowledger", "worker", *imports],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(k)
    ]


def done_counter(db: Database) -> Callable[[], int]:
    """How many jobs have succeeded, read over a raw driver connection of its
    own (outside SQLAlchemy, so the counting hooks do not see the poll)."""
    if db.is_sqlite:
        conn: Any = sqlite3.connect(
            db.url.database or "", isolation_level=None, check_same_thread=False
        )
    else:
        conn = psycopg.connect(libpq_conninfo(db.url), autocommit=True)

    def count() -> int:
        return int(conn.execute(DONE_SQL).fetchone()[0])

    return count


def next_poll_s(done: int, n: int, elapsed_s: float) -> float:
    """How long to wait before the next count: a quarter of the time the
    rate so far says is left, from ``POLL_MIN_S`` to ``POLL_MAX_S``. The
    count reads every succeeded row (about 9 ms of database CPU at 20,000
    jobs): polled every 20 ms it took a third of a core from the drain it
    measures, which the pgbench ceiling it is compared with never pays;
    adaptive, it costs a few dozen reads and still sees the end within
    ``POLL_MIN_S`` or a quarter of the last stretch."""
    if done <= 0 or elapsed_s <= 0:
        return POLL_MAX_S
    left_s = (n - done) * elapsed_s / done
    return min(POLL_MAX_S, max(POLL_MIN_S, left_s / 4))


async def wait_drained(count: Callable[[], int], n: int, timeout_s: float) -> None:
    """Poll ``count`` (on a thread: an in-process worker shares this event loop)."""
    started = time.monotonic()
    deadline = started + timeout_s
    done = 0
    while time.monotonic() < deadline:
        done = await asyncio.to_thread(count)
        if done >= n:
            return
        await asyncio.sleep(next_poll_s(done, n, time.monotonic() - started))
    raise SystemExit(f"timed out: {done}/{n} jobs succeeded")


async def span_rate(db: Database, n: int) -> tuple[float, datetime]:
    """N / (first attempt started - last attempt finished), and that first start."""
    async with db.read() as conn:
        first, last = (
            await conn.execute(
                select(func.min(executions.c.started_at), func.max(executions.c.finished_at))
            )
        ).one()
    if isinstance(first, str):  # SQLite aggregates come back as text
        first, last = datetime.fromisoformat(first), datetime.fromisoformat(last)
    if first.tzinfo is None:
        first = first.replace(tzinfo=UTC)
    return n / (last - first).total_seconds(), first


async def wake_latencies(db: Database, samples: int, *, same_process: bool) -> list[float]:
    """Commit → handler start. ``same_process``: enqueued through the
    worker's own ``Database`` (its hub is signalled on commit)."""
    clock = SystemClock()
    await asyncio.sleep(3.0)  # let the workers go idle (poll loops parked)
    ledger = ledger_driver(db)
    latencies = []
    for _ in range(samples):
        if same_process:
            async with db.begin() as conn:
                job = await ledger.job_insert(conn, JobSpec(bench_handlers.WAKE), now=clock.now())
            t0 = time.time()  # committed; the pools run only once this coroutine waits
        else:
            async with db.engine.connect() as conn:
                trans = await conn.begin()
                wake.begin_tracking(conn)
                job = await ledger.job_insert(conn, JobSpec(bench_handlers.WAKE), now=clock.now())
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
            # the handler records its own start: a slower poll only spares the worker
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.02)
    return latencies


async def xact_commit(db: Database) -> int | None:
    """The server's committed-transaction counter of this database (PostgreSQL)."""
    if db.is_sqlite:
        return None
    async with db.read() as conn:
        query = "SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"
        return int((await conn.execute(text(query))).scalar_one())


def percentile(values: list[float], q: int) -> float:
    return statistics.quantiles(values, n=100, method="inclusive")[q - 1]


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class Subprocesses:
    """K ``flowledger worker`` processes."""

    def __init__(self, url: str, k: int, *, counted: bool) -> None:
        self.url, self.k, self.counted = url, k, counted
        self.counts_dir = tempfile.mkdtemp(prefix="flowledger-bench-counts-")
        self.procs: list[subprocess.Popen[bytes]] = []

    async def start(self) -> None:
        self.procs = start_workers(self.url, self.k, self.counts_dir, counted=self.counted)

    def counts(self) -> sql_counts.Counts | None:
        if not self.counted:
            return None
        return sql_counts.snapshot(self.counts_dir, [proc.pid for proc in self.procs])

    def cpu_s(self) -> float:
        return sum(cpu_s(proc.pid) for proc in self.procs)

    async def wake(self, db: Database, samples: int) -> list[float]:
        return await wake_latencies(db, samples, same_process=False)

    async def stop(self) -> None:
        for proc in self.procs:
            proc.send_signal(signal.SIGTERM)
        for proc in self.procs:
            proc.wait(timeout=60)


class InProcess:
    """One worker in this process, built as ``flowledger worker`` builds it."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.stop_event = asyncio.Event()
        self.task: asyncio.Future[None] | None = None
        self.runtime: Any = None
        self.cpu_start = 0.0

    async def start(self) -> None:
        from flowledger.runtime import build_runtime  # inside the timed window

        os.environ["FLOWLEDGER_DATABASE_URL"] = self.url
        sql_counts.in_worker()
        sql_counts.reset()
        self.runtime = build_runtime(handler_modules=["bench_handlers"])
        self.task = asyncio.ensure_future(self.runtime.worker().run(self.stop_event))

    def counts(self) -> sql_counts.Counts:
        return sql_counts.Counts(sql_counts.TOTALS.statements, sql_counts.TOTALS.commits)

    def cpu_s(self) -> float:
        return time.process_time()

    async def wake(self, db: Database, samples: int) -> list[float]:
        return await wake_latencies(self.runtime.db, samples, same_process=True)

    async def stop(self) -> None:
        self.stop_event.set()
        if self.task is not None:
            await self.task
        if self.runtime is not None:
            await self.runtime.db.dispose()


async def timed(step: Awaitable[None]) -> float:
    started = time.perf_counter()
    await step
    return time.perf_counter() - started


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="database URL (its ledger is emptied)")
    parser.add_argument("--jobs", type=int, default=20000)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--wake-samples", type=int, default=200)
    parser.add_argument("--protocol", choices=("peer", "span"), default="peer")
    parser.add_argument(
        "--in-process", action="store_true", help="run one worker inside this process"
    )
    parser.add_argument(
        "--idempotency-keys", action="store_true", help="give every enqueued job its own key"
    )
    parser.add_argument(
        "--enqueue-only", action="store_true", help="measure the bulk enqueue only (step 1)"
    )
    parser.add_argument(
        "--no-counts", action="store_true", help="start the workers without the counting hooks"
    )
    parser.add_argument(
        "--one-pool",
        action="store_true",
        help="every job in the ledger pool, given all 8 slots (the outbound pool idles)",
    )
    args = parser.parse_args()
    if args.one_pool:
        os.environ["FLOWLEDGER_LEDGER_SLOTS"] = "8"  # the workers read their slots from it
    slots = "8 ledger slots" if args.one_pool else "4 ledger + 4 outbound slots"

    db = Database(args.db)
    await reset(db)
    sql_counts.watch_database(db)
    enqueue_per_s = await bulk_enqueue(
        db, args.jobs, keyed=args.idempotency_keys, one_pool=args.one_pool
    )
    enqueue_counts = sql_counts.Counts(sql_counts.TOTALS.statements, sql_counts.TOTALS.commits)
    print(f"enqueued {args.jobs} jobs at {enqueue_per_s:.0f}/s", flush=True)
    if args.enqueue_only:
        await db.dispose()
        print(
            f"enqueue_per_s={enqueue_per_s:.1f} enqueue_statements={enqueue_counts.statements} "
            f"enqueue_commits={enqueue_counts.commits}"
        )
        return
    workers: Subprocesses | InProcess = (
        InProcess(args.db)
        if args.in_process
        else Subprocesses(args.db, args.workers, counted=not args.no_counts)
    )
    count = done_counter(db)
    commits_before = await xact_commit(db)
    cpu_before = time.process_time() if args.in_process else 0.0
    busy_before = machine_cpu.busy_s()
    started, started_at = time.perf_counter(), datetime.now(UTC)
    try:
        await workers.start()
        await wait_drained(count, args.jobs, timeout_s=max(120.0, args.jobs / 100))
        peer_s = time.perf_counter() - started
        busy_after = machine_cpu.busy_s()
        worker_cpu = workers.cpu_s() - cpu_before
        drain_counts = workers.counts()
        commits_after = await xact_commit(db)
        span_per_s, first_start = await span_rate(db, args.jobs)
        start_up_s = (first_start - started_at).total_seconds()
        peer_per_s = args.jobs / peer_s
        where = "in this process" if args.in_process else f"in {args.workers} process(es)"
        print(
            f"drained {args.jobs} jobs, worker {where}, concurrency 8 per process "
            f"({slots}): peer protocol (start-up included, until the "
            f"database shows all succeeded) {peer_per_s:.0f}/s in {peer_s:.2f}s; "
            f"span (first start - last finish) {span_per_s:.0f}/s; "
            f"start-up (until the first attempt started) {start_up_s:.2f}s",
            flush=True,
        )
        latencies = await workers.wake(db, args.wake_samples)
    finally:
        await workers.stop()
        await db.dispose()
    drain_per_s = peer_per_s if args.protocol == "peer" else span_per_s
    p50, p95 = percentile(latencies, 50), percentile(latencies, 95)
    print(
        f"wake latency over {len(latencies)} samples: p50 {p50:.2f} ms, p95 {p95:.2f} ms, "
        f"max {max(latencies):.2f} ms"
    )
    print(
        f"enqueue_per_s={enqueue_per_s:.1f} drain_per_s={drain_per_s:.1f} "
        f"protocol={args.protocol} peer_drain_per_s={peer_per_s:.1f} "
        f"span_drain_per_s={span_per_s:.1f} start_up_s={start_up_s:.2f} "
        f"wake_p50_ms={p50:.2f} wake_p95_ms={p95:.2f}"
    )
    server = ""
    if commits_before is not None and commits_after is not None:
        server = f" pg_xact_commit_per_job={(commits_after - commits_before) / args.jobs:.2f}"
    if busy_before is not None and busy_after is not None:
        cpu_us = (busy_after - busy_before) * 1e6 / args.jobs
        server += f" drain_machine_cpu_us_per_job={cpu_us:.0f}"
    counted = "" if drain_counts is None else sql_counts.per(drain_counts, args.jobs, "job")
    print(
        counted
        + server
        + f" worker_cpu_ms_per_job={worker_cpu * 1000 / args.jobs:.3f}"
        + f" enqueue_statements={enqueue_counts.statements}"
        + f" enqueue_commits={enqueue_counts.commits}"
    )


if __name__ == "__main__":
    asyncio.run(main())
