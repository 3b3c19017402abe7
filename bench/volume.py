"""Production volume (issue 34 item 7): 90 days of history on one
PostgreSQL, then every console read, one retention pass and a peer drain.

    python bench/volume.py --db URL [--scale 1.0] [--reuse] [--runs 5]

1. Fill (skipped with ``--reuse`` when the database already holds this
   scale's rows): the database must be FRESH (no instances); it is migrated
   (``flowledger.db.migrate.upgrade``, the migrations ``flowledger migrate``
   runs), definitions are deployed through the engine, and
   :mod:`bench.volume_fill` generates the rest on the server — at scale 1
   2,000,000 instances, 12,000,000 jobs, ~30,000,000 attempts in day
   partitions — then ``VACUUM ANALYZE``. Prints rows per table and the
   database size. With ``--reuse`` the tables an earlier run's retention
   and drain rewrote are vacuumed first (autovacuum's part: it is off on
   the bench host).
2. Reads over HTTP against a real ``flowledger serve`` on the database,
   with a new admin token, the parameters the console sends
   (web/src/api/queries): RUNS timed calls after one warm-up, median each.
   ``alert_evaluate`` is one evaluator pass in this process (the worker's
   service, not an HTTP read) over 20 rules.
3. One retention run (``run_retention``, every policy) with the job, token
   and trace policies kept at a number of days that leaves one to two days
   of the oldest history expired (so a run on a reused database removes the
   next day): ``retention_ms``, with what it removed. It is recorded as the
   day's scheduled run, so the worker of step 4 does not catch up on a
   scheduled run (a fresh database has none) during the timed drain.
4. The peer-protocol drain of ``bench/ledger_throughput.py`` (N no-op jobs,
   one ``flowledger worker``, start-up included, until the database shows
   them all succeeded) on this database and on a fresh empty one
   (``<db>_empty``, dropped afterwards); ``drain_ratio`` = full ÷ empty. The
   drained jobs are deleted from the full database afterwards. Before it,
   ``VACUUM (INDEX_CLEANUP ON) workflow_jobs``: autovacuum is off on the
   bench host, and without it an earlier run's deleted jobs stay in the
   claim indexes (what the drain measures is claims against history, not
   against the bench's own unvacuumed garbage).

Last line: ``<read>_ms=…`` per read, ``retention_ms=… drain_ratio=… fill_s=…``
(``fill_s=0`` with ``--reuse``).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import psycopg
from sqlalchemy import select, text
from sqlalchemy.engine import make_url

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))  # ledger_throughput imports its siblings by name

from bench import ledger_throughput as drain  # noqa: E402
from bench import volume_fill  # noqa: E402
from bench.alerts_evaluate import RULES  # noqa: E402
from bench.console_render import free_port  # noqa: E402
from bench.monitor_queries import admin_token, start_server  # noqa: E402

from flowledger.clock import ManualClock  # noqa: E402
from flowledger.db.database import Database  # noqa: E402
from flowledger.db.migrate import upgrade  # noqa: E402
from flowledger.db.schema import workflow_jobs as jobs  # noqa: E402
from flowledger.db.urls import libpq_conninfo  # noqa: E402
from flowledger.engine import Engine  # noqa: E402
from flowledger.ledger.driver import ledger_driver  # noqa: E402
from flowledger.ledger.driver.core_maintenance import purgeable_jobs  # noqa: E402
from flowledger.ops.alerts.evaluator import evaluate_once  # noqa: E402
from flowledger.ops.alerts.rules import RuleFields, create_rule  # noqa: E402
from flowledger.ops.retention.policies import PolicyChange, update_policies  # noqa: E402
from flowledger.ops.retention.runs import run_retention  # noqa: E402

API = "/api/workflows"
DEFAULT_DB = "postgresql://postgres@127.0.0.1:5432/volume_full"
DRAIN_JOBS = 20_000
RETAINED = ("workflow_jobs", "workflow_tokens", "workflow_trace")
ALERT_TENANTS = (*volume_fill.TENANTS, None)


@dataclass(frozen=True)
class Read:
    name: str
    method: str
    path: str
    params: dict[str, Any] | None = None
    body: dict[str, Any] | None = None


def reads(instance_id: int) -> list[Read]:
    """Every console read of issue 34 item 3, as the console calls it."""
    jobs, inst, eng = f"{API}/engine/jobs", f"{API}/instances", f"{API}/engine"
    panels = {
        "totals": {},
        "daily": {"tz": "UTC", "days": 14},
        "top_definitions": {},
        "node_bottlenecks": {},
        "approver_workload": {},
        "timeouts": {},
        "async_health": {},
    }
    return [
        Read("runtime_status", "GET", f"{jobs}/runtime-status"),
        Read("summary", "GET", f"{jobs}/summary"),
        Read("jobs_list", "GET", jobs, {"limit": 20}),
        Read("jobs_status_dead", "GET", jobs, {"status": "dead", "limit": 20}),
        Read("jobs_type_webhook", "GET", jobs, {"type": "webhook_delivery", "limit": 20}),
        Read("failure_clusters", "GET", f"{jobs}/failure-clusters", {"by": "reason", "limit": 20}),
        Read("replay_preview", "POST", f"{jobs}/replay-preview", body={}),
        Read("instances_list", "GET", inst, {"limit": 20}),
        Read("instance_counts", "GET", f"{inst}/counts"),
        Read("instances_export", "GET", f"{inst}/export", {"format": "csv"}),
        Read("drawer", "GET", f"{inst}/{instance_id}/diagnostics", {"limit": 50}),
        Read("health_inspection", "GET", f"{eng}/health-inspection", {"limit": 100}),
        Read("engine_diagnostics", "GET", f"{eng}/diagnostics"),
        *(
            Read(f"analytics_{name}", "GET", f"{API}/analytics/{name.replace('_', '-')}", q)
            for name, q in panels.items()
        ),
        Read("alert_metrics", "GET", f"{eng}/alerts/metrics"),
    ]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def time_reads(base: str, token: str, instance_id: int, runs: int) -> dict[str, float]:
    out: dict[str, float] = {}
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=base, headers=headers, timeout=300) as client:
        for read in reads(instance_id):
            samples = []
            size = 0
            for n in range(runs + 1):
                t0 = time.perf_counter()
                response = client.request(
                    read.method, read.path, params=read.params, json=read.body
                )
                elapsed = time.perf_counter() - t0
                if response.status_code >= 400:
                    raise SystemExit(f"{read.name}: {response.status_code} {response.text[:300]}")
                size = len(response.content)
                if n:
                    samples.append(elapsed)
            out[read.name] = median_ms(samples)
            print(
                f"{read.name}: median {out[read.name]:.1f} ms, max {max(samples) * 1000:.1f} ms "
                f"({read.method} {read.path} {read.params or read.body or ''}; {size} bytes)",
                flush=True,
            )
    return out


async def alert_evaluate_ms(db: Database, runs: int) -> float:
    """One evaluator pass over 20 rules (created once), median of ``runs``."""
    now = datetime.now(UTC)
    async with db.begin() as conn:
        have = (await conn.execute(text("SELECT count(*) FROM workflow_alert_rules"))).scalar_one()
        if not have:
            for tenant in ALERT_TENANTS:
                for metric, comparison, threshold in RULES:
                    fields = RuleFields(f"{metric} {tenant}", metric, comparison, threshold, 0)
                    await create_rule(conn, tenant=tenant, fields=fields, actor="bench", now=now)
    clock = ManualClock(now)
    samples = []
    for n in range(runs + 1):
        t0 = time.perf_counter()
        await evaluate_once(db, clock, ledger=ledger_driver(db))
        if n:
            samples.append(time.perf_counter() - t0)
    result = median_ms(samples)
    print(f"alert_evaluate (in-process evaluator pass): median {result:.1f} ms", flush=True)
    return result


# ------------------------------------------------------------------ fill


async def deploy(db: Database) -> list[tuple[int, str, str, int, dict[str, Any]]]:
    """Every key in every tenant: (id, tenant, key, version, snapshot source)."""
    engine = Engine(db)
    out = []
    for tenant in volume_fill.TENANTS:
        for key in volume_fill.KEYS:
            row = await engine.deploy(
                volume_fill.keyed_definition(key), actor="bench", tenant=tenant
            )
            async with db.read() as conn:
                source = (
                    await conn.execute(
                        text("SELECT source FROM workflow_definitions WHERE id = :id"),
                        {"id": row["id"]},
                    )
                ).scalar_one()
            out.append((int(row["id"]), tenant, key, int(row["version"]), dict(source)))
    return out


def instances_in(conninfo: str) -> int:
    with psycopg.connect(conninfo) as conn:
        return int(conn.execute("SELECT count(*) FROM workflow_instances").fetchone()[0])  # type: ignore[index]


# what an earlier run's retention pass and drain deleted and rewrote
REWRITTEN = ("workflow_jobs", "workflow_job_executions", "workflow_tokens", "workflow_trace")


def vacuum_after_earlier_runs(conninfo: str) -> None:
    """Leave the tables as autovacuum would after an earlier run (it is off
    on the bench host; production runs it, and 0024 gives ``workflow_jobs``
    thresholds of 1 % + 10,000 rows): without it the index-only reads of
    a re-timed run fetch every heap page the earlier run's deletes touched
    (the runtime status's dead count 22 → 184 ms). A fresh fill ends with
    its own ``VACUUM ANALYZE``."""
    t0 = time.perf_counter()
    with psycopg.connect(conninfo, autocommit=True) as conn:
        for table in REWRITTEN:
            conn.execute(f"VACUUM (INDEX_CLEANUP ON, ANALYZE) {table}")
    print(f"--reuse: vacuumed {', '.join(REWRITTEN)} in {time.perf_counter() - t0:.0f} s")


async def fill_or_reuse(
    db: Database, conninfo: str, sizes: volume_fill.Sizes, reuse: bool
) -> float:
    await upgrade(db)
    have = instances_in(conninfo)
    if reuse and have == sizes.instances:
        print(f"--reuse: {have} instances already filled", flush=True)
        vacuum_after_earlier_runs(conninfo)
        return 0.0
    if have:
        raise SystemExit(
            f"the database holds {have} instances (expected a fresh one, or --reuse with "
            f"{sizes.instances})"
        )
    t0 = time.perf_counter()
    definitions = await deploy(db)
    now = datetime.now(UTC)
    with psycopg.connect(conninfo, autocommit=True) as conn:
        volume_fill.fill(conn, sizes, now=now, definitions=definitions)
        t1 = time.perf_counter()
        conn.execute("VACUUM ANALYZE")
        print(f"VACUUM ANALYZE: {time.perf_counter() - t1:.0f} s", flush=True)
    return time.perf_counter() - t0


def table_report(conninfo: str) -> None:
    with psycopg.connect(conninfo) as conn:
        for table in (*volume_fill.FILLED, "workflow_definitions"):
            rows = conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # type: ignore[index]
            size = conn.execute(
                f"SELECT pg_size_pretty(pg_total_relation_size('{table}')),"
                f" (SELECT count(*) FROM pg_inherits WHERE inhparent = '{table}'::regclass)"
            ).fetchone()
            parts = f", {size[1]} partitions" if size and size[1] else ""  # type: ignore[index]
            print(f"rows {table}: {rows} ({size[0] if size else '?'}{parts})")
        for status, n in conn.execute(
            "SELECT status, count(*) FROM workflow_instances GROUP BY 1 ORDER BY 2 DESC"
        ):
            print(f"  instances {status}: {n}")
        for status, n in conn.execute(
            "SELECT status, count(*) FROM workflow_jobs GROUP BY 1 ORDER BY 2 DESC"
        ):
            print(f"  jobs {status}: {n}")
        size_b = conn.execute("SELECT pg_database_size(current_database())").fetchone()[0]  # type: ignore[index]
        print(f"database size: {size_b} bytes ({size_b / 2**30:.1f} GiB)", flush=True)


def drawer_instance(conninfo: str) -> int:
    """A running instance of the last day with an error (the drawer's case)."""
    with psycopg.connect(conninfo) as conn:
        row = conn.execute(
            "SELECT id FROM workflow_instances WHERE status = 'running' AND error IS NOT NULL"
            " ORDER BY id DESC LIMIT 1"
        ).fetchone()
        if row is None:
            row = conn.execute("SELECT max(id) FROM workflow_instances").fetchone()
    return int(row[0])  # type: ignore[index]


# ------------------------------------------------------------- retention


def keep_days_for_one_day(oldest: datetime, now: datetime) -> int:
    """Days to keep so that the oldest one to two days of history are past the policy."""
    age_days = (now - oldest) / timedelta(days=1)
    return max(1, int(age_days) - 1)


async def retention_pass(db: Database) -> float:
    now = datetime.now(UTC)
    async with db.begin() as conn:
        # the oldest job retention may remove (dead jobs and those of live
        # instances stay forever, so the oldest job of all would not move)
        oldest = (
            await conn.execute(
                select(jobs.c.updated_at).where(*purgeable_jobs(now)).order_by(jobs.c.id).limit(1)
            )
        ).scalar_one()
        keep = keep_days_for_one_day(oldest, now)
        changes = [PolicyChange(name, keep_days=keep) for name in RETAINED]
        await update_policies(conn, changes, actor="bench", now=now)
    t0 = time.perf_counter()
    # recorded as the day's scheduled run: the worker started for the drain
    # then finds the day's run done, as a worker past 03:00 would, and does
    # not start another one inside the drain it is timed on
    run = await run_retention(db, now=now, trigger="scheduled", actor="bench")
    elapsed = (time.perf_counter() - t0) * 1000
    print(
        f"retention: keep {keep} days (oldest removable job settled {oldest:%Y-%m-%d %H:%M}): "
        f"{elapsed:.0f} ms, {run.get('rowsRemoved')} rows removed, status {run.get('status')}",
        flush=True,
    )
    for item in run.get("items", []):
        print(f"  {item}")
    return elapsed


# ------------------------------------------------------------------ drain


async def drain_rate(url: str, n: int) -> float:
    """The peer protocol of bench/ledger_throughput.py on the database at
    ``url`` as it is (not emptied); only this drain's jobs are counted."""
    db = Database(url)
    conninfo = libpq_conninfo(db.url)
    try:
        await upgrade(db)
        with psycopg.connect(conninfo, autocommit=True) as conn:
            # the table as autovacuum leaves it (0024's thresholds; off
            # on the bench host): an earlier run's drained and deleted jobs
            # left their entries in the claim path's partial indexes, and
            # every claim walked them (on vol_drain after five runs 266 index
            # pages of ix_workflow_jobs_claim_due per job against 18); the
            # empty database is a fresh one. INDEX_CLEANUP ON: a vacuum of a
            # few dead rows in a big table otherwise leaves index entries
            conn.execute("VACUUM (INDEX_CLEANUP ON) workflow_jobs")
            # past the sequence, not only the live rows: an earlier run's
            # drained jobs were deleted (left as dead index entries, not
            # vacuumed here: autovacuum is off on the bench host), and a
            # count from the newest live id walked them on every poll
            base = int(
                conn.execute(  # type: ignore[index]
                    "SELECT GREATEST((SELECT COALESCE(max(id), 0) FROM workflow_jobs), "
                    "COALESCE(pg_sequence_last_value('workflow_jobs_id_seq'), 0))"
                ).fetchone()[0]
            )
        enqueued_at = datetime.now(UTC)
        await drain.bulk_enqueue(db, n)
        count = counter(conninfo, base)
        workers = drain.Subprocesses(url, 1, counted=False)
        started = time.perf_counter()
        try:
            await workers.start()
            await drain.wait_drained(count, n, timeout_s=max(300.0, n / 50))
            elapsed = time.perf_counter() - started
        finally:
            await workers.stop()
        with psycopg.connect(conninfo) as conn:  # the drained jobs go, and their attempts
            # (no key cascades them on PostgreSQL: db/job_history_keys; the
            # start bound keeps the delete in today's partition). Left, they
            # were the last hour's attempts of the runtime status and the
            # alert metrics in the next run's reads
            conn.execute(
                "DELETE FROM workflow_job_executions WHERE job_id > %s AND started_at >= %s",
                (base, enqueued_at),
            )
            conn.execute("DELETE FROM workflow_jobs WHERE id > %s", (base,))
    finally:
        await db.dispose()
    rate = n / elapsed
    print(
        f"drain on {make_url(url).database}: {n} jobs in {elapsed:.2f} s = {rate:.0f}/s", flush=True
    )
    return rate


def counter(conninfo: str, base: int) -> Callable[[], int]:
    """The drain's succeeded jobs (ids past ``base``): the full table's
    succeeded count would read millions of rows per poll."""
    conn = psycopg.connect(conninfo, autocommit=True)

    def count() -> int:
        query = "SELECT count(*) FROM workflow_jobs WHERE id > %s AND status = 'succeeded'"
        return int(conn.execute(query, (base,)).fetchone()[0])  # type: ignore[index]

    return count


def empty_database(url: str) -> str:
    target = make_url(url)
    name = f"{target.database}_empty"
    admin = target.set(database="postgres")
    with psycopg.connect(libpq_conninfo(admin), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
        conn.execute(f'CREATE DATABASE "{name}"')
    return target.set(database=name).render_as_string(hide_password=False)


def drop_database(url: str) -> None:
    target = make_url(url)
    admin = target.set(database="postgres")
    with psycopg.connect(libpq_conninfo(admin), autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{target.database}" WITH (FORCE)')


# ------------------------------------------------------------------- main


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", default=DEFAULT_DB, help=f"database URL (default {DEFAULT_DB})")
    parser.add_argument("--scale", type=float, default=1.0, help="1.0 = 2M instances, 12M jobs")
    parser.add_argument("--reuse", action="store_true", help="skip the fill when already filled")
    parser.add_argument("--runs", type=int, default=5, help="timed calls per read (median)")
    parser.add_argument("--drain-jobs", type=int, default=DRAIN_JOBS)
    parser.add_argument("--skip-drain", action="store_true")
    parser.add_argument("--skip-retention", action="store_true")
    args = parser.parse_args(argv)
    if args.scale <= 0:
        parser.error("--scale must be positive")
    return args


async def main() -> None:
    args = parse_args()
    sizes = volume_fill.Sizes.of(args.scale)
    db = Database(args.db)
    conninfo = libpq_conninfo(db.url)
    print(f"scale {args.scale}: {sizes.instances} instances, {sizes.jobs} jobs", flush=True)
    fill_s = await fill_or_reuse(db, conninfo, sizes, args.reuse)
    if fill_s:
        print(f"filled in {fill_s:.0f} s", flush=True)
    table_report(conninfo)
    token = await admin_token(db)
    instance_id = drawer_instance(conninfo)
    port = free_port()
    server = start_server(args.db, port)
    try:
        figures = time_reads(f"http://127.0.0.1:{port}", token, instance_id, args.runs)
    finally:
        server.terminate()
        server.wait(timeout=30)
    figures["alert_evaluate"] = await alert_evaluate_ms(db, args.runs)
    retention_ms = float("nan") if args.skip_retention else await retention_pass(db)
    await db.dispose()
    ratio = float("nan")
    if not args.skip_drain:
        full = await drain_rate(args.db, args.drain_jobs)
        empty_url = empty_database(args.db)
        try:
            empty = await drain_rate(empty_url, args.drain_jobs)
        finally:
            drop_database(empty_url)
        ratio = full / empty
        print(f"drain: full {full:.0f}/s, empty {empty:.0f}/s", flush=True)
    print(
        " ".join(f"{name}_ms={ms:.1f}" for name, ms in figures.items())
        + f" retention_ms={retention_ms:.0f} drain_ratio={ratio:.2f} fill_s={fill_s:.0f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
