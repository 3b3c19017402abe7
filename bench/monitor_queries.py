"""Instance monitoring queries over HTTP (issue 10, SPEC O-1, O-2, O-3):

    python bench/monitor_queries.py --db URL --instances 100000

The database at URL is migrated and its instances (with their tasks,
tokens, trace, form writes, outbox rows) and jobs are EMPTIED first.
1. fill N instances by bulk insert with :func:`bench.monitor_fill.fill_instances`
   (a realistic mix of states; ~10 tasks, ~8 tokens, ~30 trace rows and ~5
   jobs each), then VACUUM ANALYZE / ANALYZE;
2. start the real API (``flowledger serve``: uvicorn, port 8711 unless
   ``--port``) in a child process and create an admin token;
3. time over HTTP, CALLS calls each after WARMUP warm-ups: the first list
   page under single filters (status, current node, current assignee, has
   error, stuck for 2 h, keyword) and under five filters at once; the status
   counts (unfiltered and filtered); the CSV export of 10,000 rows (fewer
   calls); ``GET /instances/{id}/diagnostics`` of one running instance
   (n/a when that route answers 404 — it is built in another branch);
4. stop the server.
Prints each median; ``list_ms`` and ``counts_ms`` are the slowest medians.
Last line: ``list_ms=… counts_ms=… export_10k_ms=… diagnostics_ms=…``
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
from sqlalchemy import select, text

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.monitor_fill import fill_instances

from flowledger.api.auth import create_user, issue_token
from flowledger.api.permissions import ALL_PERMISSIONS
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances
from flowledger.db.migrate import upgrade

CALLS = 20
WARMUP = 2
EXPORT_CALLS = 5
BASE = "/api/workflows"
EMPTIED = [
    "workflow_task_reminders",
    "workflow_form_writes",
    "workflow_comments",
    "workflow_trace",
    "workflow_event_outbox",
    "workflow_tasks",
    "workflow_tokens",
    "workflow_forks",
    "workflow_instances",
    "workflow_job_effects",
    "workflow_job_executions",
    "workflow_jobs",
]


async def reset(db: Database) -> None:
    await upgrade(db)
    async with db.begin() as conn:
        if db.is_sqlite:
            for table in EMPTIED:
                await conn.execute(text(f"DELETE FROM {table}"))
        else:
            await conn.execute(text(f"TRUNCATE {', '.join(EMPTIED)} RESTART IDENTITY CASCADE"))


async def admin_token(db: Database) -> str:
    user = f"bench-{uuid.uuid4().hex[:8]}"
    now = datetime.now(UTC)
    async with db.begin() as conn:
        await create_user(conn, user, permissions=ALL_PERMISSIONS, tenants=["*"], now=now)
        return await issue_token(conn, user, now=now)


async def one_running(db: Database) -> int:
    i = workflow_instances.c
    async with db.read() as conn:
        found = (
            await conn.execute(
                select(i.id).where(i.status == "running").order_by(i.id.desc()).limit(1)
            )
        ).scalar_one()
    return int(found)


def start_server(url: str, port: int) -> subprocess.Popen[bytes]:
    env = {**os.environ, "FLOWLEDGER_DATABASE_URL": url}
    src = str(Path(__file__).resolve().parent.parent / "src")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (src, env.get("PYTHONPATH", "")) if p)
    proc = subprocess.Popen(
        [sys.executable, "-m", "flowledger", "serve", "--port", str(port)],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"the API exited with {proc.returncode}")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/api/openapi.json", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    proc.terminate()
    raise SystemExit("the API did not come up within 120 s")


def timed(
    client: httpx.Client, path: str, params: dict[str, Any] | None = None, calls: int = CALLS
) -> float | None:
    """The median in ms of ``calls`` GETs (after WARMUP); None when the route is absent."""
    samples = []
    for n in range(WARMUP + calls):
        t0 = time.perf_counter()
        response = client.get(f"{BASE}{path}", params=params)
        elapsed = (time.perf_counter() - t0) * 1000
        if response.status_code == 404 and n == 0 and path.endswith("/diagnostics"):
            print(f"GET {path}: 404 — not in this build; reported as n/a")
            return None
        response.raise_for_status()
        if n >= WARMUP:
            samples.append(elapsed)
    median = statistics.median(samples)
    extra = ""
    if "x-total-count" in response.headers:
        extra = (
            f" rows={response.headers.get('x-exported-count')}/{response.headers['x-total-count']}"
        )
    elif path == "/instances":
        extra = f" items={len(response.json()['items'])}"
    print(f"GET {path} {params or ''}: median {median:.1f} ms, max {max(samples):.1f}{extra}")
    return median


def fmt(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1f}"


async def prepare(url: str, n: int, *, fill: bool) -> tuple[str, int]:
    db = Database(url)
    try:
        if fill:
            await reset(db)
            t0 = time.perf_counter()
            report = await fill_instances(db, n, now=datetime.now(UTC))
            print(
                f"filled {report.instances} instances, {report.tasks} tasks, "
                f"{report.tokens} tokens, {report.trace} trace rows, {report.jobs} jobs "
                f"in {time.perf_counter() - t0:.1f} s ({report.by_status})"
            )
        return await admin_token(db), await one_running(db)
    finally:
        await db.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--db", required=True, help="database URL (its instances are emptied)")
    parser.add_argument("--instances", type=int, default=100_000)
    parser.add_argument("--port", type=int, default=8711)
    parser.add_argument(
        "--reuse", action="store_true", help="time an already filled database (no reset, no fill)"
    )
    args = parser.parse_args()

    token, instance_id = asyncio.run(prepare(args.db, args.instances, fill=not args.reuse))
    server = start_server(args.db, args.port)
    try:
        with httpx.Client(
            base_url=f"http://127.0.0.1:{args.port}",
            headers={"Authorization": f"Bearer {token}"},
            timeout=120,
        ) as client:
            filters: list[dict[str, Any]] = [
                {},
                {"status": "running"},
                {"currentNode": "step3"},
                {"currentAssignee": "user12"},
                {"hasError": "true"},
                {"stuckMinutes": 120},
                {"keyword": "上海"},
                {  # five at once
                    "status": "running,suspended",
                    "definitionKey": "bench_purchase",
                    "currentNode": "step5",
                    "hasError": "false",
                    "startedFrom": "2000-01-01T00:00:00Z",
                },
            ]
            lists = [timed(client, "/instances", f) for f in filters]
            counts = [
                timed(client, "/instances/counts"),
                timed(client, "/instances/counts", {"definitionKey": "bench_purchase"}),
                timed(client, "/instances/counts", {"stuckMinutes": 120}),
            ]
            export = timed(client, "/instances/export", {"format": "csv"}, calls=EXPORT_CALLS)
            timed(client, "/instances/export", {"format": "xlsx"}, calls=EXPORT_CALLS)
            diagnostics = timed(client, f"/instances/{instance_id}/diagnostics")
    finally:
        server.terminate()
        server.wait(timeout=30)
    list_ms = max(v for v in lists if v is not None)
    counts_ms = max(v for v in counts if v is not None)
    print(
        f"list_ms={list_ms:.1f} counts_ms={counts_ms:.1f} "
        f"export_10k_ms={fmt(export)} diagnostics_ms={fmt(diagnostics)}"
    )


if __name__ == "__main__":
    main()
