"""Engine throughput (issue: process engine).

    python bench/engine_throughput.py --db URL --instances 2000 --workers 1

The database at URL is migrated and EMPTIED first (TRUNCATE on PostgreSQL,
so a reused database measures like a fresh one). The reference definition:
start → approval → parallel fork of two branches, each a 0-second delay (an
asynchronous hand-off through a delay_wake job) → join → exclusive → end.
1. deploy it; start N instances through the Python API (4 concurrent callers);
2. start K real `flowledger worker` processes;
3. approve every task through the Python API (4 concurrent callers);
4. wait until every instance is approved.
instances_per_s = N / (time from the first start to the last finish);
steps_per_s = engine steps (node entries in the engine trace) / that time.
Machine-independent figures (issue 15 item 1): SQL statements and commits
per instance, counted by SQLAlchemy event hooks in this process (its start
and approve calls, not its polling) and in the workers (``--import
sql_counts``); on PostgreSQL also the server's own xact_commit delta (which
includes this script's polling). cpu_ms_per_instance: the CPU time (user +
system) of this process and of the workers, from start to finish, per
instance (less sensitive to a loaded machine than the wall clock);
machine_cpu_ms_per_instance (Linux): the whole machine's busy CPU over the
same window (PostgreSQL's backends too; ``bench/machine_cpu.py``), per
instance.
With the standard OTEL_* variables set (docs/telemetry.md) this process
and the workers trace. Last lines: instances_per_s=… steps_per_s=…, then statements_per_instance=…
commits_per_instance=…, then cpu_ms_per_instance=… (bench=… workers=…)
machine_cpu_ms_per_instance=…
"""

from __future__ import annotations

import argparse
import asyncio
import os
import resource
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sqlalchemy import func, select, text

from flowledger.clock import SystemClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances, workflow_tasks, workflow_trace
from flowledger.db.migrate import upgrade
from flowledger.db.schema import metadata
from flowledger.engine import Engine
from flowledger.telemetry import configure_from_env

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import machine_cpu  # noqa: E402
import sql_counts  # noqa: E402

CONCURRENCY = 4

REFERENCE = {
    "key": "bench_reference",
    "name": "Engine benchmark reference",
    "form": {"fields": [{"key": "amount", "type": "number", "required": True}]},
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "approve", "type": "approval", "assignees": {"users": ["approver"]}},
        {"key": "fork", "type": "parallel"},
        {"key": "left", "type": "delay", "duration": "PT0S"},
        {"key": "right", "type": "delay", "duration": "PT0S"},
        {"key": "join", "type": "parallel"},
        {"key": "route", "type": "exclusive"},
        {"key": "end", "type": "end"},
        {"key": "endLarge", "type": "end"},
    ],
    "edges": [
        {"from": "start", "to": "approve"},
        {"from": "approve", "to": "fork"},
        {"from": "fork", "to": "left"},
        {"from": "fork", "to": "right"},
        {"from": "left", "to": "join"},
        {"from": "right", "to": "join"},
        {"from": "join", "to": "route"},
        {"from": "route", "to": "endLarge", "condition": "form.amount > 1000"},
        {"from": "route", "to": "end", "default": True},
    ],
}


async def reset(db: Database) -> None:
    """Migrate and empty every table. On PostgreSQL by TRUNCATE: a DELETE
    leaves the last run's dead rows and index entries behind, and a run on a
    reused database then measured its predecessors' bloat (about a third
    fewer instances/s after a dozen runs than on a fresh database)."""
    await upgrade(db)
    names = [t.name for t in reversed(metadata.sorted_tables) if t.name != "alembic_version"]
    async with db.begin() as conn:
        if db.is_sqlite:
            for name in names:
                await conn.execute(text(f"DELETE FROM {name}"))
        else:
            await conn.execute(text(f"TRUNCATE {', '.join(names)} RESTART IDENTITY CASCADE"))


async def in_parallel(items: list[int], fn: object) -> list[object]:
    queue = list(items)
    results: list[object] = []

    async def worker() -> None:
        while queue:
            results.append(await fn(queue.pop()))  # type: ignore[operator]

    await asyncio.gather(*(worker() for _ in range(CONCURRENCY)))
    return results


def start_workers(url: str, k: int, counts_dir: str) -> list[subprocess.Popen[bytes]]:
    env = {
        **os.environ,
        "FLOWLEDGER_DATABASE_URL": url,
        sql_counts.ENV: counts_dir,
        "PYTHONPATH": os.pathsep.join([str(HERE), os.environ.get("PYTHONPATH", "")]),
    }
    return [
        subprocess.Popen(
            [sys.executable, "-m", "flowledger", "worker", "--import", "sql_counts"],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        for _ in range(k)
    ]


def cpu_s(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


async def count(db: Database, query: object) -> int:
    async with db.read() as conn:
        return int((await conn.execute(query)).scalar_one())  # type: ignore[call-overload]


async def xact_commit(db: Database) -> int | None:
    """The server's committed-transaction counter of this database (PostgreSQL)."""
    if db.is_sqlite:
        return None
    return await count(
        db,
        text("SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()"),
    )


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="database URL (it is emptied)")
    parser.add_argument("--instances", type=int, default=2000)
    parser.add_argument("--workers", type=int, default=1)
    args = parser.parse_args()
    n = args.instances

    configure_from_env()  # traced when the OTEL_* variables ask, as the workers are
    db = Database(args.db)
    await reset(db)
    poll = Database(args.db, pool_size=2)  # polling stays out of the counts
    engine = Engine(db, SystemClock())
    await engine.deploy(REFERENCE, actor="bench")
    sql_counts.watch_database(db)
    counts_dir = tempfile.mkdtemp(prefix="flowledger-bench-counts-")
    commits_before = await xact_commit(poll)
    workers = start_workers(args.db, args.workers, counts_dir)
    try:
        cpu_before = cpu_s(resource.RUSAGE_SELF)
        busy_before = machine_cpu.busy_s()
        started = time.perf_counter()
        await in_parallel(
            list(range(n)),
            lambda i: engine.start("bench_reference", form={"amount": i}, initiator="bench"),
        )
        print(f"started {n} instances in {time.perf_counter() - started:.2f}s", flush=True)
        async with db.read() as conn:
            task_ids = list(
                (
                    await conn.execute(
                        select(workflow_tasks.c.id).where(workflow_tasks.c.status == "pending")
                    )
                ).scalars()
            )
        await in_parallel(task_ids, lambda t: engine.approve(t, actor="approver"))
        print(f"approved {len(task_ids)} tasks at {time.perf_counter() - started:.2f}s", flush=True)
        deadline = time.monotonic() + max(300.0, n / 5)
        done_query = (
            select(func.count())
            .select_from(workflow_instances)
            .where(workflow_instances.c.status == "approved")
        )
        while (done := await count(poll, done_query)) < n:
            if time.monotonic() > deadline:
                raise SystemExit(f"timed out: {done}/{n} instances approved")
            await asyncio.sleep(0.1)
        elapsed = time.perf_counter() - started
        busy_after = machine_cpu.busy_s()
        bench_cpu = cpu_s(resource.RUSAGE_SELF) - cpu_before
        steps = await count(
            poll,
            select(func.count())
            .select_from(workflow_trace)
            .where(workflow_trace.c.event == "node_entered"),
        )
    finally:
        for proc in workers:
            proc.send_signal(signal.SIGTERM)
        for proc in workers:
            proc.wait(timeout=60)
    workers_cpu = cpu_s(resource.RUSAGE_CHILDREN)  # includes their start-up
    commits_after = await xact_commit(poll)
    await db.dispose()
    await poll.dispose()
    counts = sql_counts.collect(counts_dir)
    counts.add(sql_counts.TOTALS)
    if sql_counts.BY_SQL:
        sql_counts.dump_by_sql(counts_dir, "bench")
        print(f"statements by kind: {counts_dir}/*.sql")
    print(
        f"{n} instances approved in {elapsed:.2f}s with {args.workers} worker process(es); "
        f"{steps} engine steps"
    )
    print(f"instances_per_s={n / elapsed:.1f} steps_per_s={steps / elapsed:.1f}")
    server = ""
    if commits_before is not None and commits_after is not None:
        server = f" pg_xact_commit_per_instance={(commits_after - commits_before) / n:.2f}"
    print(sql_counts.per(counts, n, "instance") + server)
    machine = ""
    if busy_before is not None and busy_after is not None:
        machine = f" machine_cpu_ms_per_instance={1000 * (busy_after - busy_before) / n:.2f}"
    print(
        f"cpu_ms_per_instance={1000 * (bench_cpu + workers_cpu) / n:.2f} "
        f"(bench={1000 * bench_cpu / n:.2f} workers={1000 * workers_cpu / n:.2f})" + machine
    )


if __name__ == "__main__":
    asyncio.run(main())
