"""Analytics panels through the HTTP API (issue 12, SPEC O-14).

    python bench/analytics_queries.py --db URL --instances 100000 [--port 8715]

The database at URL is migrated and its engine and ledger tables are
EMPTIED first.
1. fill N instances spread over the last 30 days (eight definitions, three
   tenants; ~15 % running, 1 % suspended, the rest finished as approved,
   rejected, withdrawn or canceled after 10 min … 3 days), each with one to
   three human tasks (completed for finished instances; pending, half of them
   with a due time around now, for running ones) plus a cc task, one job
   (mostly succeeded, some dead / pending / failed), a webhook delivery for
   every third instance and a subprocess child for every fiftieth — by bulk
   insert: COPY on PostgreSQL, executemany in chunks on SQLite;
2. VACUUM ANALYZE (PostgreSQL) / ANALYZE (SQLite);
3. start ``flowledger serve`` as a separate process on 127.0.0.1:PORT and,
   with a new admin token (every tenant: the largest scans), time 20 calls
   (after 2 warm-ups) of each panel over real HTTP (and of ``GET /me``: the
   baseline cost of HTTP and token auth, printed but not in the last line);
4. stop the server.
Prints the median of each panel. Last line:
totals_ms=… daily_ms=… top_definitions_ms=… node_bottlenecks_ms=…
approver_workload_ms=… timeouts_ms=… async_health_ms=… evaluate_ms=… (one alert
evaluator pass, SPEC O-22, with one overall rule per alert metric)
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import statistics
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import psycopg
from sqlalchemy import Table, insert, text

from flowledger.api.auth import create_user, issue_token
from flowledger.api.permissions import ALL_PERMISSIONS
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import (
    workflow_definitions,
    workflow_instances,
    workflow_tasks,
)
from flowledger.db.event_schema import workflow_event_subscriptions, workflow_subscription_hits
from flowledger.db.migrate import upgrade
from flowledger.db.schema import workflow_jobs
from flowledger.db.urls import libpq_conninfo
from flowledger.ledger.driver import ledger_driver
from flowledger.ops.alerts.evaluator import evaluate_once
from flowledger.ops.alerts.metrics import metric_names
from flowledger.ops.alerts.rules import RuleFields, create_rule

CALLS = 20
WARMUP = 2
CHUNK = 5000
BASE = "/api/workflows/analytics"
PANELS = [
    "totals",
    "daily",
    "top-definitions",
    "node-bottlenecks",
    "approver-workload",
    "timeouts",
    "async-health",
]
TENANTS = ["acme", "acme", "globex", "initech"]
DEFINITIONS = ["leave", "expense", "purchase", "travel", "onboarding", "invoice", "contract", "it"]
NODES = ["manager", "finance", "director"]
APPROVERS = [f"user{i:03d}" for i in range(60)]
STATUSES = [  # (instance status, per mille)
    ("running", 150),
    ("suspended", 10),
    ("approved", 560),
    ("rejected", 150),
    ("withdrawn", 40),
    ("canceled", 90),
]
JOB_STATUSES = [("succeeded", 900), ("dead", 40), ("pending", 40), ("failed", 20)]
JOB_TYPES = ["engine_step", "webhook_delivery", "event_dispatch", "task_timeout"]
TRUNCATE = (
    "workflow_subscription_hits, workflow_event_subscriptions, workflow_job_effects, "
    "workflow_job_executions, workflow_jobs, workflow_tasks, workflow_tokens, workflow_trace, "
    "workflow_event_outbox, workflow_compensation_logs, workflow_compensations, "
    "workflow_instances, workflow_definitions"
)


def _pick(table: list[tuple[str, int]], roll: int) -> str:
    for value, weight in table:
        roll -= weight
        if roll < 0:
            return value
    return table[-1][0]


Rows = dict[str, list[dict[str, Any]]]


def generate(n: int, now: datetime) -> Iterator[Rows]:
    """Chunks of rows per table; instance ids 1..n (+ children), oldest first."""
    rng = random.Random(12)
    start = now - timedelta(days=30)
    span = (now - timedelta(minutes=1) - start).total_seconds()
    definition_ids = {
        (t, d): i + 1
        for i, (t, d) in enumerate((t, d) for t in sorted(set(TENANTS)) for d in DEFINITIONS)
    }
    subscription_ids = {t: i + 1 for i, t in enumerate(sorted(set(TENANTS)))}
    next_instance = n + 1
    chunk: Rows = {"instances": [], "tasks": [], "jobs": [], "hits": []}
    for i in range(1, n + 1):
        tenant = TENANTS[i % len(TENANTS)]
        key = DEFINITIONS[min(int(rng.paretovariate(1.0)) - 1, len(DEFINITIONS) - 1)]
        created = start + timedelta(seconds=span * i / n)
        status = _pick(STATUSES, rng.randrange(1000))
        finished = None
        if status not in ("running", "suspended"):
            finished = min(created + timedelta(seconds=rng.randint(600, 3 * 86_400)), now)
        base = {
            "tenant_id": tenant,
            "definition_key": key,
            "definition_version": 1,
            "snapshot": "{}",
            "form_data": "{}",
            "initiator": "bench",
            "trace_id": f"tr{i}",
            "error": None,
            "parent_task_id": None,
        }
        chunk["instances"].append(
            {
                **base,
                "id": i,
                "definition_id": definition_ids[(tenant, key)],
                "status": status,
                "parent_instance_id": None,
                "created_at": created,
                "updated_at": finished or created,
                "finished_at": finished,
            }
        )
        if i % 50 == 0:
            child_status = "running" if finished is None else "approved"
            chunk["instances"].append(
                {
                    **base,
                    "id": next_instance,
                    "definition_id": definition_ids[(tenant, "it")],
                    "definition_key": "it",
                    "status": child_status,
                    "parent_instance_id": i,
                    "trace_id": f"tr{i}c",
                    "created_at": created,
                    "updated_at": finished or created,
                    "finished_at": finished,
                }
            )
            next_instance += 1
        for k, node in enumerate(NODES[: rng.randint(1, 3)]):
            task_created = created + timedelta(minutes=5 * k)
            pending = finished is None
            handled = (
                None
                if pending
                else min(task_created + timedelta(seconds=rng.randint(60, 86_400)), now)
            )
            due = None
            if pending and rng.random() < 0.5:
                due = now + timedelta(hours=rng.uniform(-48, 48))
            chunk["tasks"].append(
                {
                    "instance_id": i,
                    "tenant_id": tenant,
                    "definition_key": key,
                    "node_key": node,
                    "kind": "approval",
                    "status": "pending" if pending else "completed",
                    "assignee": APPROVERS[rng.randrange(len(APPROVERS))],
                    "action": None if pending else "approve",
                    "due_at": due,
                    "created_at": task_created,
                    "finished_at": handled,
                }
            )
        chunk["tasks"].append(
            {
                "instance_id": i,
                "tenant_id": tenant,
                "definition_key": key,
                "node_key": "watchers",
                "kind": "cc",
                "status": "cc",
                "assignee": "watcher",
                "action": None,
                "due_at": None,
                "created_at": created,
                "finished_at": None,
            }
        )
        job_status = _pick(JOB_STATUSES, rng.randrange(1000))
        chunk["jobs"].append(
            {
                "type": JOB_TYPES[i % len(JOB_TYPES)],
                "pool": "workflow-ledger",
                "status": job_status,
                "payload": "{}",
                "tenant_id": tenant,
                "instance_id": i,
                "priority": 100,
                "run_at": created,
                "attempts": 1,
                "max_attempts": 5,
                "generation": 1,
                "execution_timeout_ms": 600_000,
                "operation_key": f"op{i}",
                "trace_id": f"tr{i}",
                "created_at": created,
                "updated_at": created + timedelta(seconds=2),
            }
        )
        if i % 3 == 0:
            chunk["hits"].append(
                {
                    "subscription_id": subscription_ids[tenant],
                    "event_id": i,
                    "event_type": "instance.started",
                    "tenant_id": tenant,
                    "instance_id": i,
                    "status": "delivered" if i % 30 else "failed",
                    "created_at": created,
                    "updated_at": created,
                }
            )
        if len(chunk["instances"]) >= CHUNK:
            yield chunk
            chunk = {"instances": [], "tasks": [], "jobs": [], "hits": []}
    yield chunk


async def reset(db: Database, now: datetime) -> None:
    await upgrade(db)
    async with db.begin() as conn:
        if db.is_sqlite:
            for table in TRUNCATE.split(", "):
                await conn.execute(text(f"DELETE FROM {table}"))
        else:
            await conn.execute(text(f"TRUNCATE {TRUNCATE} RESTART IDENTITY CASCADE"))
        definitions = [
            {
                "tenant_id": t,
                "key": d,
                "version": 1,
                "name": d,
                "source": {},
                "deployed_by": "bench",
                "deployed_at": now - timedelta(days=31),
            }
            for t in sorted(set(TENANTS))
            for d in DEFINITIONS
        ]
        await conn.execute(insert(workflow_definitions), definitions)
        subscriptions = [
            {
                "tenant_id": t,
                "name": "bench",
                "event_types": ["*"],
                "target_url": "http://127.0.0.1:9/hook",
                "secret_encrypted": "x",
                "enabled": True,
                "created_by": "bench",
                "created_at": now,
                "updated_at": now,
            }
            for t in sorted(set(TENANTS))
        ]
        await conn.execute(insert(workflow_event_subscriptions), subscriptions)


_TABLES: dict[str, Table] = {
    "instances": workflow_instances,
    "tasks": workflow_tasks,
    "jobs": workflow_jobs,
    "hits": workflow_subscription_hits,
}


async def _copy_pg(db: Database, n: int, now: datetime) -> None:
    async with await psycopg.AsyncConnection.connect(libpq_conninfo(db.url)) as conn:
        async with conn.cursor() as cur:
            for chunk in generate(n, now):
                for name, rows in chunk.items():
                    if not rows:
                        continue
                    cols = list(rows[0])
                    table = _TABLES[name].name
                    async with cur.copy(f"COPY {table} ({', '.join(cols)}) FROM STDIN") as copy:
                        for row in rows:
                            await copy.write_row([row[c] for c in cols])
            for name in ("instances", "tasks", "jobs", "hits"):
                table = _TABLES[name].name
                await cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                    f"(SELECT COALESCE(MAX(id), 1) FROM {table}))"
                )
        await conn.commit()
        await conn.set_autocommit(True)
        await conn.execute("VACUUM ANALYZE")


async def _insert_sqlite(db: Database, n: int, now: datetime) -> None:
    for chunk in generate(n, now):
        async with db.begin() as conn:
            for name, rows in chunk.items():
                if rows:
                    for row in rows:
                        for key in ("snapshot", "form_data", "payload"):
                            if key in row:
                                row[key] = json.loads(row[key])
                    await conn.execute(insert(_TABLES[name]), rows)
    async with db.begin() as conn:
        await conn.execute(text("ANALYZE"))


async def admin_token(db: Database, now: datetime) -> str:
    user = f"bench-{uuid.uuid4().hex[:8]}"
    async with db.begin() as conn:
        await create_user(conn, user, permissions=ALL_PERMISSIONS, tenants=["*"], now=now)
        return await issue_token(conn, user, now=now)


async def timed(client: httpx.AsyncClient, url: str) -> float:
    samples = []
    for i in range(WARMUP + CALLS):
        t0 = time.perf_counter()
        response = await client.get(url)
        elapsed = (time.perf_counter() - t0) * 1000
        response.raise_for_status()
        if i >= WARMUP:
            samples.append(elapsed)
    median = statistics.median(samples)
    print(f"GET {url}: median {median:.1f} ms, max {max(samples):.1f}")
    return median


async def wait_for_server(base: str, proc: asyncio.subprocess.Process) -> None:
    async with httpx.AsyncClient(base_url=base) as client:
        for _ in range(300):
            if proc.returncode is not None:
                raise SystemExit(f"the server exited with {proc.returncode}")
            try:
                await client.get("/api/openapi.json")
                return
            except httpx.TransportError:
                await asyncio.sleep(0.1)
    raise SystemExit("the server did not start")


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="database URL (its tables are emptied)")
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--port", type=int, default=8715)
    parser.add_argument(
        "--skip-fill", action="store_true", help="time the data of a previous run (no reset)"
    )
    args = parser.parse_args()

    db = Database(args.db)
    now = datetime.now(UTC)
    if not args.skip_fill:
        await reset(db, now)
        t0 = time.perf_counter()
        if db.is_sqlite:
            await _insert_sqlite(db, args.instances, now)
        else:
            await _copy_pg(db, args.instances, now)
        print(f"filled {args.instances} instances in {time.perf_counter() - t0:.1f} s")
    token = await admin_token(db, now)
    await db.dispose()

    env = {**os.environ, "FLOWLEDGER_DATABASE_URL": args.db}
    server = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "flowledger",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(args.port),
        env=env,
    )
    base = f"http://127.0.0.1:{args.port}"
    try:
        await wait_for_server(base, server)
        headers = {"Authorization": f"Bearer {token}"}
        async with httpx.AsyncClient(base_url=base, headers=headers, timeout=60) as client:
            baseline = await timed(client, "/api/workflows/me")
            figures = {p: await timed(client, f"{BASE}/{p}") for p in PANELS}
    finally:
        server.terminate()
        await server.wait()
    figures["evaluate"] = await evaluator_pass_ms(args.db, now)
    print(f"(HTTP + token auth baseline, GET /me: {baseline:.1f} ms)")
    print(" ".join(f"{p.replace('-', '_')}_ms={v:.1f}" for p, v in figures.items()))


async def evaluator_pass_ms(url: str, now: datetime) -> float:
    """Median of one alert evaluator pass (SPEC O-22) over the filled data,
    with one overall rule per alert metric (the health score included)."""
    db = Database(url)
    try:
        async with db.begin() as conn:
            for table in ("workflow_alert_events", "workflow_alert_rules"):
                await conn.execute(text(f"DELETE FROM {table}"))
            for metric in metric_names():
                fields = RuleFields(f"bench {metric}", metric, "gt", 1e9, 0)
                await create_rule(conn, tenant=None, fields=fields, actor="bench", now=now)
        clock = ManualClock(now)
        await evaluate_once(db, clock, ledger=ledger_driver(db))  # warm-up
        samples = []
        for _ in range(7):
            t0 = time.perf_counter()
            await evaluate_once(db, clock, ledger=ledger_driver(db))
            samples.append((time.perf_counter() - t0) * 1000)
        median = statistics.median(samples)
        print(f"evaluate_once: median {median:.1f} ms, max {max(samples):.1f}")
        return median
    finally:
        await db.dispose()


if __name__ == "__main__":
    asyncio.run(main())
