"""Job ledger operations queries through the HTTP API (issue: job ledger
operations, SPEC L-23 … L-25).

    python bench/ops_queries.py --db URL --jobs 1000000

The database at URL is migrated and its ledger tables are EMPTIED first.
1. fill N jobs and 3 x N attempts in a realistic mix — mostly succeeded, some
   pending (due and future), running (a few stuck), paused, canceled, dead and
   failed with ~20 error causes whose texts vary in ids and numbers; spread
   over 30 days; four tenants (one of them: system jobs without a tenant) —
   by bulk insert: COPY on PostgreSQL, executemany in chunks on SQLite; a
   few worker nodes (live, stale, gone);
2. VACUUM ANALYZE (PostgreSQL) / ANALYZE (SQLite);
3. the API in-process (httpx over ASGITransport) with a new admin token:
   20 timed calls (after 2 warm-ups) each of runtime-status, summary, the
   first page of the job list under three filters (status=dead,
   type=webhook_delivery, keyword=timeout), failure-clusters and POST
   replay-preview. A replay-preview that answers 404/405 (not built yet) is
   reported as nan.
Prints the median of each; list_ms is the slowest of the three list medians.
Last line: runtime_status_ms=… summary_ms=… list_ms=… clusters_ms=… preview_ms=…
"""

from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
from sqlalchemy import insert, select, text

from flowledger.api import create_app
from flowledger.api.auth import create_user, issue_token
from flowledger.api.permissions import ALL_PERMISSIONS
from flowledger.db.database import Database
from flowledger.db.migrate import upgrade
from flowledger.db.schema import system_scheduler_nodes as nodes
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.db.urls import libpq_conninfo
from flowledger.ledger.fingerprint import fingerprint

CALLS = 20
WARMUP = 2
CHUNK = 5000
JOBS = "/api/workflows/engine/jobs"
LEDGER, OUTBOUND = "workflow-ledger", "workflow-ledger-outbound"
TYPES = [  # (type, pool, weight %)
    ("webhook_delivery", OUTBOUND, 25),
    ("event_dispatch", OUTBOUND, 20),
    ("delay_wake", LEDGER, 15),
    ("task_timeout", LEDGER, 10),
    ("trigger_dispatch", OUTBOUND, 8),
    ("automation_action", OUTBOUND, 6),
    ("external_dispatch", OUTBOUND, 5),
    ("compensation_action", OUTBOUND, 4),
    ("subprocess_spawn", LEDGER, 3),
    ("subprocess_join", LEDGER, 2),
    ("schedule_launch", LEDGER, 2),
]
STATUSES = [  # (status, per mille)
    ("succeeded", 880),
    ("pending", 30),
    ("running", 5),
    ("paused", 10),
    ("canceled", 25),
    ("dead", 40),
    ("failed", 10),
]
TENANTS = ["acme", "acme", "acme", "globex", "globex", "initech", "initech", "umbrella", None]
ERRORS = [  # ~20 causes; each text varies in ids, numbers, URLs and times
    "Timeout after {ms} ms calling https://erp.example/orders/{i}",
    "timeout waiting for connection from pool (size {n})",
    "read timeout on https://hooks.acme.example/in/{u}?sig={h}",
    "HTTP 502 from https://erp.example/orders/{i}",
    "HTTP 503 from https://crm.example/api/v2/leads/{i}",
    "HTTP 404 from https://crm.example/api/v2/leads/{i}",
    "HTTP 429 rate limited; retry after {n} s",
    "connection refused to 10.0.{n}.{m}:5432",
    "order {i} not found in ledger 'L-{n}'",
    "invoice {h} rejected at {t}",
    "subscription {u} disabled",
    "template render failed: missing field 'amount' in form {i}",
    "SMTP 421 service not available ({n} queued)",
    "duplicate key value violates unique constraint 'uq_orders_{n}'",
    "external outcome unconfirmed after {ms} ms",
    "signature mismatch for delivery {u}",
    "payload too large: {ms} bytes (limit {n})",
    "TLS handshake failed with erp-{n}.example: certificate expired",
    "instance {i} is not running (status 'canceled')",
    "compensation of step {n} failed: HTTP 500 from https://pay.example/refunds/{i}",
]


def _error(cause: int, i: int, rng: random.Random, now: datetime) -> str:
    return ERRORS[cause].format(
        i=i,
        n=rng.randint(1, 250),
        m=rng.randint(0, 9),
        ms=rng.randint(100, 60_000),
        u=uuid.UUID(int=rng.getrandbits(128)),
        h=f"{rng.getrandbits(96):024x}",
        t=(now - timedelta(seconds=rng.randint(0, 10**6))).isoformat(timespec="seconds"),
    )


def _pick(table: list[tuple[Any, ...]], roll: int) -> tuple[Any, ...]:
    for row in table:
        roll -= row[-1]
        if roll < 0:
            return row
    return table[-1]


def generate(n: int, now: datetime) -> Iterator[tuple[dict[str, Any], list[dict[str, Any]]]]:
    """Job rows (ids 1..n, oldest first) each with its three attempt rows."""
    rng = random.Random(42)
    start = now - timedelta(days=30)
    span = (now - timedelta(minutes=5) - start).total_seconds()
    fps = [fingerprint(_error(c, 1, random.Random(c), now)) for c in range(len(ERRORS))]
    for i in range(1, n + 1):
        job_type, pool, _ = _pick(TYPES, rng.randrange(100))
        status = _pick(STATUSES, rng.randrange(1000))[0]
        created = start + timedelta(seconds=span * i / n)
        cause = min(int(rng.paretovariate(1.2)) - 1, len(ERRORS) - 1)
        failing = status in ("dead", "failed") or (status == "pending" and i % 2 == 0)
        error = _error(cause, i, rng, now) if failing else None
        job: dict[str, Any] = {
            "id": i,
            "type": job_type,
            "pool": pool,
            "status": status,
            "payload": {"n": i},
            "tenant_id": TENANTS[i % len(TENANTS)],
            "instance_id": i // 4 + 1,
            "priority": 100,
            "run_at": created,
            "attempts": 3,
            "max_attempts": 5,
            "generation": 1,
            "lease_token": None,
            "lease_owner": None,
            "lease_until": None,
            "execution_timeout_ms": 600_000,
            "execution_deadline": None,
            "operation_key": f"op{i}",
            "trace_id": f"tr{i // 3}",
            "last_error": error,
            "last_error_code": "error" if error else None,
            "last_error_fingerprint": fps[cause] if error else None,
            "created_at": created,
            "updated_at": created + timedelta(seconds=95),
        }
        if status == "pending":
            job["run_at"] = now + timedelta(seconds=rng.randint(-600, 600))
        elif status == "running":
            job.update(lease_token="t", lease_owner="bench-node")
            job["execution_deadline"] = now + timedelta(minutes=rng.choice([-1, 9, 9, 9]))
            job["lease_until"] = now + timedelta(seconds=rng.choice([-120, 30, 40, 50]))
        attempts = []
        for k in (1, 2, 3):
            delay = rng.choice([rng.randint(0, 2000)] * 19 + [rng.randint(5_000, 90_000)])
            started = created + timedelta(seconds=30 * (k - 1), milliseconds=delay)
            if status == "running" and k == 3:
                outcome = "running"
            elif failing or (k < 3 and rng.random() < 0.05):
                outcome = "failed"
            elif status == "canceled" and k == 3:
                outcome = "canceled"
            else:
                outcome = "succeeded"
            duration = None if outcome == "running" else rng.randint(5, 2500)
            attempts.append(
                {
                    "id": 3 * (i - 1) + k,
                    "job_id": i,
                    "generation": 1,
                    "attempt": k,
                    "status": outcome,
                    "node_id": "bench-node",
                    "scheduled_at": started - timedelta(milliseconds=delay),
                    "started_at": started,
                    "finished_at": None
                    if duration is None
                    else started + timedelta(milliseconds=duration),
                    "duration_ms": duration,
                    "error": error if outcome == "failed" else None,
                    "error_fingerprint": fps[cause] if outcome == "failed" and error else None,
                }
            )
        yield job, attempts


async def reset(db: Database) -> None:
    await upgrade(db)
    tables = "workflow_job_effects, workflow_job_executions, workflow_jobs, system_scheduler_nodes"
    async with db.begin() as conn:
        if db.is_sqlite:
            for table in tables.split(", "):
                await conn.execute(text(f"DELETE FROM {table}"))
        else:
            await conn.execute(text(f"TRUNCATE {tables} RESTART IDENTITY CASCADE"))


async def _copy_pg(db: Database, n: int, now: datetime) -> None:
    """Two passes over the (seeded, so identical) generator: jobs, then attempts."""
    first_job, first_runs = next(generate(1, now))
    job_cols, run_cols = list(first_job), list(first_runs[0])
    async with await psycopg.AsyncConnection.connect(libpq_conninfo(db.url)) as conn:
        async with conn.cursor() as cur:
            async with cur.copy(f"COPY workflow_jobs ({', '.join(job_cols)}) FROM STDIN") as copy:
                for job, _ in generate(n, now):
                    job["payload"] = f'{{"n": {job["id"]}}}'
                    await copy.write_row([job[c] for c in job_cols])
            runs = f"COPY workflow_job_executions ({', '.join(run_cols)}) FROM STDIN"
            async with cur.copy(runs) as copy:
                for _, attempts in generate(n, now):
                    for run in attempts:
                        await copy.write_row([run[c] for c in run_cols])
            for table, last in (("workflow_jobs", n), ("workflow_job_executions", 3 * n)):
                await cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), {max(last, 1)})"
                )
        await conn.commit()
        await conn.set_autocommit(True)
        for table in ("workflow_jobs", "workflow_job_executions"):
            await conn.execute(f"VACUUM ANALYZE {table}")


async def _insert_sqlite(db: Database, n: int, now: datetime) -> None:
    batch: list[dict[str, Any]] = []
    runs: list[dict[str, Any]] = []
    for job, attempts in generate(n, now):
        batch.append(job)
        runs.extend(attempts)
        if len(batch) >= CHUNK:
            async with db.begin() as conn:
                await conn.execute(insert(jobs), batch)
                await conn.execute(insert(executions), runs)
            batch, runs = [], []
    if batch:
        async with db.begin() as conn:
            await conn.execute(insert(jobs), batch)
            await conn.execute(insert(executions), runs)
    async with db.begin() as conn:
        await conn.execute(text("ANALYZE"))


async def fill(db: Database, n: int, now: datetime) -> None:
    if db.is_sqlite:
        await _insert_sqlite(db, n, now)
    else:
        await _copy_pg(db, n, now)
    node_rows = [("live-1", 5), ("live-2", 20), ("live-3", 45), ("stale", 150), ("gone", 900)]
    async with db.begin() as conn:
        for name, age in node_rows:
            at = now - timedelta(seconds=age)
            pools = {LEDGER: 4, OUTBOUND: 4}
            await conn.execute(
                insert(nodes).values(
                    id=f"bench-{name}",
                    hostname="bench",
                    pid=1,
                    roles=["worker"],
                    pools=pools,
                    slots_capacity=8,
                    slots_in_use=3,
                    status="active",
                    started_at=at,
                    heartbeat_at=at,
                )
            )
        sample = await conn.execute(
            select(jobs.c.last_error, jobs.c.last_error_fingerprint)
            .where(jobs.c.last_error.is_not(None))
            .limit(200)
        )
        for error, fp in sample:  # the filled fingerprints are the ledger's own
            assert fingerprint(error) == fp, (error, fp)


async def admin_token(db: Database, now: datetime) -> str:
    user = f"bench-{uuid.uuid4().hex[:8]}"
    async with db.begin() as conn:
        await create_user(conn, user, permissions=ALL_PERMISSIONS, tenants=["*"], now=now)
        return await issue_token(conn, user, now=now)


async def timed(client: httpx.AsyncClient, method: str, url: str, **kw: Any) -> float:
    """The median in ms of CALLS calls (after WARMUP); nan when the route is absent."""
    samples = []
    for i in range(WARMUP + CALLS):
        t0 = time.perf_counter()
        response = await client.request(method, url, **kw)
        elapsed = (time.perf_counter() - t0) * 1000
        if response.status_code in (404, 405):
            print(f"{method} {url}: {response.status_code} — not there; reported as nan")
            return float("nan")
        response.raise_for_status()
        if i >= WARMUP:
            samples.append(elapsed)
    median = statistics.median(samples)
    print(f"{method} {url} {kw.get('params', '')}: median {median:.1f} ms, max {max(samples):.1f}")
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
    t0 = time.perf_counter()
    await fill(db, args.jobs, now)
    print(f"filled {args.jobs} jobs, {3 * args.jobs} attempts in {time.perf_counter() - t0:.1f} s")
    token = await admin_token(db, now)
    transport = httpx.ASGITransport(app=create_app(db))
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with httpx.AsyncClient(
            transport=transport, base_url="http://bench", headers=headers, timeout=60
        ) as client:
            status_ms = await timed(client, "GET", f"{JOBS}/runtime-status")
            summary_ms = await timed(client, "GET", f"{JOBS}/summary")
            lists = [
                await timed(client, "GET", JOBS, params=params)
                for params in (
                    {"status": "dead"},
                    {"type": "webhook_delivery"},
                    {"keyword": "timeout"},
                )
            ]
            clusters_ms = await timed(client, "GET", f"{JOBS}/failure-clusters")
            preview_ms = await timed(
                client,
                "POST",
                f"{JOBS}/replay-preview",
                json={"statuses": ["dead"], "types": ["webhook_delivery", "event_dispatch"]},
            )
    finally:
        await db.dispose()
    print(
        f"runtime_status_ms={status_ms:.1f} summary_ms={summary_ms:.1f} list_ms={max(lists):.1f} "
        f"clusters_ms={clusters_ms:.1f} preview_ms={preview_ms:.1f}"
    )


if __name__ == "__main__":
    asyncio.run(main())
