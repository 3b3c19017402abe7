"""The health inspection at scale (issue: health inspection, SPEC O-16).

    python bench/health_inspection.py --db URL --instances 100000

The database at URL is migrated and its engine and ledger tables are
EMPTIED first. Then:

1. fill N running instances of one deployed definition by bulk insert (COPY
   on PostgreSQL, executemany in chunks on SQLite), each with its history
   (2 completed tasks, 2 consumed tokens, 2 succeeded jobs with an attempt
   each, 3 dispatched outbox rows) and one healthy wait state, younger than
   the 30-minute threshold: a pending approval (some with a future timeout
   job), a delay with its future wake job, an external approval whose
   dispatch succeeded, a waiting trigger whose call was accepted (awaiting
   its callback). About 1 % are broken, in rotation: a task whose token was
   consumed, a delay whose wake job is lost, a delay whose wake job is
   overdue, a dead trigger job, a human task waiting for 3 h, a stalled
   instance (no task, no job), a failed outbox row, a pending outbox row for
   2 h, an external dispatch never run;
2. 288 health snapshots (the last 24 h, every 5 min);
3. ``flowledger serve --port 8713`` (a subprocess) and, over HTTP with a new
   admin token, 20 timed calls (after 2 warm-ups) of
   ``GET /engine/health-inspection``, ``GET /engine/diagnostics`` (n/a when it
   answers 404: built on another branch) and ``GET /engine/health-history``;
   the server is stopped afterwards.

Last line: ``inspection_ms=… diagnostics_ms=… history_ms=… score_ms=…``
(medians; ``score_ms``: ``GET /engine/health-score``). ``--port`` (default
8713) moves the server.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from datetime import datetime, timedelta
from typing import Any

import httpx
import psycopg
from sqlalchemy import insert, select, text

from flowledger.api.auth import create_user, issue_token
from flowledger.api.permissions import ALL_PERMISSIONS
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import (
    workflow_definitions,
    workflow_event_outbox,
    workflow_instances,
    workflow_tasks,
    workflow_tokens,
)
from flowledger.db.health_schema import workflow_health_snapshots
from flowledger.db.migrate import upgrade
from flowledger.db.schema import workflow_job_executions, workflow_jobs
from flowledger.db.urls import libpq_conninfo
from flowledger.engine import Engine

PORT = 8713
CALLS = 20
WARMUP = 2
CHUNK = 5000
TENANTS = ["acme", "globex", "initech", "default"]
BROKEN = [
    "token_consumed",
    "wake_job_lost",
    "wake_job_overdue",
    "trigger_dead",
    "human_old",
    "stalled",
    "outbox_failed",
    "outbox_pending",
    "external_never_run",
]
DEFINITION = {
    "key": "bench",
    "name": "bench",
    "form": {"fields": []},
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "manager", "type": "approval", "assignees": {"users": ["alice"]}},
        {"key": "pause", "type": "delay", "duration": "PT2H"},
        {
            "key": "partner",
            "type": "external_approval",
            "dispatch": {"kind": "http", "url": "http://127.0.0.1:9/x", "bodyTemplate": "{}"},
        },
        {
            "key": "erp",
            "type": "trigger",
            "call": {"kind": "http", "url": "http://127.0.0.1:9/y", "bodyTemplate": "{}"},
        },
        {"key": "end", "type": "end"},
    ],
    "edges": [
        {"from": "start", "to": "manager"},
        {"from": "manager", "to": "pause"},
        {"from": "pause", "to": "partner"},
        {"from": "partner", "to": "erp"},
        {"from": "erp", "to": "end"},
    ],
}


class Ids:
    def __init__(self) -> None:
        self.task = self.token = self.job = self.run = self.event = 0

    def next(self, name: str) -> int:
        value = getattr(self, name) + 1
        setattr(self, name, value)
        return value


def _job(ids: Ids, iid: int, tenant: str, now: datetime, **values: Any) -> dict[str, Any]:
    jid = ids.next("job")
    row: dict[str, Any] = {
        "id": jid,
        "type": "delay_wake",
        "pool": "workflow-ledger",
        "status": "succeeded",
        "payload": {},
        "tenant_id": tenant,
        "instance_id": iid,
        "task_id": None,
        "node_key": None,
        "priority": 100,
        "run_at": now,
        "attempts": 1,
        "max_attempts": 5,
        "generation": 1,
        "execution_timeout_ms": 600_000,
        "operation_key": f"op{jid}",
        "trace_id": f"tr{iid}",
        "idempotency_key": None,
        "last_error_code": None,
        "created_at": now,
        "updated_at": now,
    }
    row.update(values)
    return row


def _run(ids: Ids, job: dict[str, Any], status: str = "succeeded") -> dict[str, Any]:
    return {
        "id": ids.next("run"),
        "job_id": job["id"],
        "generation": 1,
        "attempt": 1,
        "status": status,
        "node_id": "bench",
        "scheduled_at": job["run_at"],
        "started_at": job["run_at"],
        "finished_at": job["run_at"],
        "duration_ms": 12,
    }


class Builder:
    """Token and task rows of one instance."""

    def __init__(
        self, ids: Ids, rows: dict[str, list[dict[str, Any]]], iid: int, tenant: str
    ) -> None:
        self.ids, self.rows, self.iid, self.tenant = ids, rows, iid, tenant

    def token(self, node: str, state: str, at: datetime) -> int:
        kid = self.ids.next("token")
        self.rows["k"].append(
            {
                "id": kid,
                "instance_id": self.iid,
                "node_key": node,
                "state": state,
                "fork_stack": [],
                "created_at": at,
                "consumed_at": None if state != "consumed" else at,
            }
        )
        return kid

    def task(
        self, node: str, kind: str, status: str, token_id: int, at: datetime, **kw: Any
    ) -> int:
        tid = self.ids.next("task")
        self.rows["t"].append(
            {
                "id": tid,
                "instance_id": self.iid,
                "tenant_id": self.tenant,
                "definition_key": "bench",
                "node_key": node,
                "token_id": token_id,
                "kind": kind,
                "status": status,
                "assignee": kw.get("assignee", "alice"),
                "due_at": kw.get("due_at"),
                "created_at": at,
                "finished_at": None if status in ("pending", "waiting") else at,
            }
        )
        return tid


def generate(
    n: int, now: datetime, definition_id: int, snapshot: Any
) -> Iterator[dict[str, list[dict[str, Any]]]]:
    """The rows of each instance (ids 1..n), table by table."""
    ids = Ids()
    for iid in range(1, n + 1):
        tenant = TENANTS[iid % len(TENANTS)]
        broken = BROKEN[(iid // 100) % len(BROKEN)] if iid % 100 == 37 else None
        young = now - timedelta(seconds=(iid * 7) % 1200)  # 0-20 min ago
        born = young - timedelta(days=1)
        rows: dict[str, list[dict[str, Any]]] = {k: [] for k in ("i", "k", "t", "j", "x", "o")}
        rows["i"].append(
            {
                "id": iid,
                "tenant_id": tenant,
                "definition_id": definition_id,
                "definition_key": "bench",
                "definition_version": 1,
                "snapshot": snapshot,
                "status": "running",
                "form_data": {},
                "initiator": "u",
                "trace_id": f"tr{iid}",
                "created_at": born,
                "updated_at": young,
            }
        )

        builder = Builder(ids, rows, iid, tenant)
        token, task = builder.token, builder.task

        for k in range(2):  # history
            old = born + timedelta(minutes=10 * k)
            kid = token("manager", "consumed", old)
            task("manager", "approval", "completed", kid, old)
            job = _job(ids, iid, tenant, now=old, type="task_timeout", status="canceled")
            rows["j"].append(job)
            rows["x"].append(_run(ids, job))
        for _ in range(3):
            rows["o"].append(
                {
                    "id": ids.next("event"),
                    "tenant_id": tenant,
                    "instance_id": iid,
                    "definition_key": "bench",
                    "event_type": "task.created",
                    "payload": {},
                    "status": "dispatched",
                    "trace_id": f"tr{iid}",
                    "created_at": born,
                    "dispatched_at": born,
                }
            )
        shape = iid % 10
        if broken == "stalled":
            token("manager", "active", young)
        elif broken in ("wake_job_lost", "wake_job_overdue") or (broken is None and shape < 2):
            kid = token("pause", "active", young)
            tid = task("pause", "delay", "waiting", kid, young, assignee="system")
            if broken != "wake_job_lost":
                due = now - timedelta(minutes=30) if broken else now + timedelta(hours=2)
                rows["j"].append(
                    _job(
                        ids,
                        iid,
                        tenant,
                        now=young,
                        type="delay_wake",
                        status="pending",
                        task_id=tid,
                        node_key="pause",
                        run_at=due,
                    )
                )
        elif broken in ("external_never_run",) or (broken is None and shape == 2):
            at = now - timedelta(hours=1) if broken else young
            kid = token("partner", "active", at)
            tid = task("partner", "external_approval", "pending", kid, at, assignee="external")
            job = _job(
                ids,
                iid,
                tenant,
                now=at,
                type="external_dispatch",
                pool="workflow-ledger-outbound",
                task_id=tid,
                node_key="partner",
                status="pending" if broken else "succeeded",
                run_at=now + timedelta(hours=1) if broken else at,
            )
            rows["j"].append(job)
            if not broken:
                rows["x"].append(_run(ids, job))
        elif broken == "trigger_dead" or (broken is None and shape == 3):
            kid = token("erp", "active", young)
            tid = task("erp", "trigger", "waiting", kid, young, assignee="system")
            job = _job(
                ids,
                iid,
                tenant,
                now=young,
                type="trigger_dispatch",
                pool="workflow-ledger-outbound",
                task_id=tid,
                node_key="erp",
                status="dead" if broken else "succeeded",
                last_error_code="attempts_exhausted" if broken else None,
            )
            rows["j"].append(job)
            rows["x"].append(_run(ids, job, "failed" if broken else "succeeded"))
        else:
            at = {
                "human_old": now - timedelta(hours=3),
                "token_consumed": now - timedelta(hours=1),
            }.get(broken or "", young)
            kid = token("manager", "active", at)
            if broken == "token_consumed":
                rows["k"][-1]["state"] = "consumed"
            tid = task("manager", "approval", "pending", kid, at)
            if shape in (4, 5):
                rows["j"].append(
                    _job(
                        ids,
                        iid,
                        tenant,
                        now=at,
                        type="task_timeout",
                        status="pending",
                        task_id=tid,
                        node_key="manager",
                        run_at=now + timedelta(hours=4),
                    )
                )
        if broken in ("outbox_failed", "outbox_pending"):
            rows["o"][-1].update(
                status=broken.removeprefix("outbox_"),
                created_at=now - timedelta(hours=2),
                dispatched_at=None,
            )
        yield rows


TABLES = {
    "i": workflow_instances,
    "k": workflow_tokens,
    "t": workflow_tasks,
    "j": workflow_jobs,
    "x": workflow_job_executions,
    "o": workflow_event_outbox,
}


async def reset(db: Database) -> tuple[int, Any, datetime]:
    """Migrate, empty, deploy the definition; its id and snapshot, and now."""
    await upgrade(db)
    names = [
        "workflow_health_snapshots",
        "workflow_event_outbox",
        "workflow_job_executions",
        "workflow_job_effects",
        "workflow_jobs",
        "workflow_tasks",
        "workflow_tokens",
        "workflow_forks",
        "workflow_trace",
        "workflow_instances",
        "workflow_definitions",
    ]
    async with db.begin() as conn:
        if db.is_sqlite:
            for name in names:
                await conn.execute(text(f"DELETE FROM {name}"))
        else:
            await conn.execute(text(f"TRUNCATE {', '.join(names)} RESTART IDENTITY CASCADE"))
    now = await db.now()
    engine = Engine(db, ManualClock(now))
    await engine.deploy(DEFINITION, actor="bench")
    async with db.read() as conn:
        row = (await conn.execute(select(workflow_definitions))).one()
    return int(row.id), row.source, now


def _pg_value(value: Any) -> Any:
    return json.dumps(value) if isinstance(value, (dict, list)) else value


async def _copy_pg(db: Database, batches: Iterator[dict[str, list[dict[str, Any]]]]) -> None:
    buffers: dict[str, list[dict[str, Any]]] = {k: [] for k in TABLES}
    for rows in batches:
        for key, values in rows.items():
            buffers[key].extend(values)
    async with await psycopg.AsyncConnection.connect(libpq_conninfo(db.url)) as conn:
        async with conn.cursor() as cur:
            for key in ("i", "k", "t", "j", "x", "o"):
                table, values = TABLES[key], buffers[key]
                if not values:
                    continue
                cols = list(values[0])
                async with cur.copy(f"COPY {table.name} ({', '.join(cols)}) FROM STDIN") as copy:
                    for row in values:
                        await copy.write_row([_pg_value(row.get(c)) for c in cols])
                await cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                    f"{max(r['id'] for r in values)})"
                )
        await conn.commit()
        await conn.set_autocommit(True)
        for table in TABLES.values():
            await conn.execute(f"VACUUM ANALYZE {table.name}")


async def _insert_sqlite(db: Database, batches: Iterator[dict[str, list[dict[str, Any]]]]) -> None:
    buffers: dict[str, list[dict[str, Any]]] = {k: [] for k in TABLES}

    async def flush() -> None:
        async with db.begin() as conn:
            for key in ("i", "k", "t", "j", "x", "o"):
                if buffers[key]:
                    cols = set().union(*(r.keys() for r in buffers[key]))
                    await conn.execute(
                        insert(TABLES[key]), [{c: r.get(c) for c in cols} for r in buffers[key]]
                    )
                    buffers[key] = []

    for count, rows in enumerate(batches, 1):
        for key, values in rows.items():
            buffers[key].extend(values)
        if count % CHUNK == 0:
            await flush()
    await flush()
    async with db.begin() as conn:
        await conn.execute(text("ANALYZE"))


async def fill(db: Database, n: int, now: datetime, definition_id: int, snapshot: Any) -> None:
    batches = generate(n, now, definition_id, snapshot)
    if db.is_sqlite:
        await _insert_sqlite(db, batches)
    else:
        await _copy_pg(db, batches)
    async with db.begin() as conn:
        points = [
            {
                "taken_at": now - timedelta(minutes=5 * k),
                "score": 80,
                "by_rule": {"waiting_task_stuck": 3},
                "by_level": {"critical": 2, "warning": 3},
                "runtime": {"stuck": 0, "backlog": 1, "dead": 2},
            }
            for k in range(288)
        ]
        await conn.execute(insert(workflow_health_snapshots), points)


async def admin_token(db: Database, now: datetime) -> str:
    user = f"bench-{uuid.uuid4().hex[:8]}"
    async with db.begin() as conn:
        await create_user(conn, user, permissions=ALL_PERMISSIONS, tenants=["*"], now=now)
        return await issue_token(conn, user, now=now)


async def timed(client: httpx.AsyncClient, url: str, **params: Any) -> float | None:
    """The median in ms of CALLS calls (after WARMUP); None when the route is absent."""
    samples = []
    for i in range(WARMUP + CALLS):
        t0 = time.perf_counter()
        response = await client.get(url, params=params)
        elapsed = (time.perf_counter() - t0) * 1000
        if response.status_code in (404, 405):
            print(f"GET {url}: {response.status_code} — not on this branch; n/a")
            return None
        response.raise_for_status()
        if i == 0 and "health-inspection" in url:
            body = response.json()
            print(f"inspection summary: {body['summary']}")
        if i >= WARMUP:
            samples.append(elapsed)
    median = statistics.median(samples)
    print(f"GET {url} {params or ''}: median {median:.1f} ms, max {max(samples):.1f}")
    return median


def _fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


async def _wait_ready(
    client: httpx.AsyncClient, server: subprocess.Popen[bytes], port: int = PORT
) -> None:
    for _ in range(300):
        if server.poll() is not None:
            raise SystemExit(f"the API server exited with {server.returncode}")
        try:
            await client.get(f"http://127.0.0.1:{port}/api/openapi.json")
            return
        except httpx.TransportError:
            await asyncio.sleep(0.1)
    raise SystemExit("the API server did not start")


async def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="database URL (its engine tables are emptied)")
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--port", type=int, default=PORT)
    args = parser.parse_args()

    db = Database(args.db)
    definition_id, snapshot, now = await reset(db)
    t0 = time.perf_counter()
    await fill(db, args.instances, now, definition_id, snapshot)
    print(f"filled {args.instances} running instances in {time.perf_counter() - t0:.1f} s")
    token = await admin_token(db, now)
    await db.dispose()
    env = {**os.environ, "FLOWLEDGER_DATABASE_URL": args.db}
    server = subprocess.Popen(  # noqa: ASYNC220 (started once, before any timing)
        [sys.executable, "-m", "flowledger", "serve", "--port", str(args.port)], env=env
    )
    base = f"http://127.0.0.1:{args.port}/api/workflows/engine"
    headers = {"Authorization": f"Bearer {token}"}
    try:
        async with httpx.AsyncClient(headers=headers, timeout=120) as client:
            await _wait_ready(client, server, args.port)
            inspection = await timed(client, f"{base}/health-inspection")
            score = await timed(client, f"{base}/health-score")
            diagnostics = await timed(client, f"{base}/diagnostics")
            start = (now - timedelta(hours=24)).isoformat()
            history = await timed(client, f"{base}/health-history", **{"from": start})
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(
        f"inspection_ms={_fmt(inspection)} diagnostics_ms={_fmt(diagnostics)} "
        f"history_ms={_fmt(history)} score_ms={_fmt(score)}"
    )


if __name__ == "__main__":
    asyncio.run(main())
