"""A reusable filler of realistic workflow instances for monitoring benches
and tests (issue 10, SPEC O-1 … O-12):

    from bench.monitor_fill import fill_instances
    report = await fill_instances(db, 100_000, now=now)

Deploys one 8-step approval definition per tenant through the engine (so
snapshots are real), then bulk inserts N instances — COPY on PostgreSQL,
executemany in chunks on SQLite — in a realistic mix of states: running
(some stuck for days, some with an error or a dead job), suspended,
approved, rejected, withdrawn and canceled; ~5% are sub-instances of an
earlier one. Each instance has ~10 tasks (one pending at the current node
when live, cc tasks among them), ~8 tokens (one active when live), ~30
trace rows and ~5 jobs. Form data mixes ASCII and Chinese text.

Ids continue after the tables' current maximum (the database need not be
empty), sequences are moved past them on PostgreSQL, and the generator is
seeded, so the same call fills the same rows. ``form_note``, ``tenants`` and
``children`` (False: instance rows only) let a test shape the rows it needs.
"""

from __future__ import annotations

import itertools
import json
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import psycopg
from sqlalchemy import Table, func, insert, select, text

from flowledger.db.database import Database
from flowledger.db.engine_schema import (
    workflow_definitions,
    workflow_instances,
    workflow_tasks,
    workflow_tokens,
    workflow_trace,
)
from flowledger.db.schema import workflow_jobs
from flowledger.db.urls import libpq_conninfo
from flowledger.engine import Engine

DEFINITION_KEY = "bench_purchase"
NODES = [f"step{k}" for k in range(1, 9)]
USERS = [f"user{k:02d}" for k in range(40)]
CHUNK = 2000
STATUSES = [  # (status, per mille)
    ("running", 380),
    ("suspended", 40),
    ("approved", 400),
    ("rejected", 90),
    ("withdrawn", 40),
    ("canceled", 50),
]
NOTES = ["采购办公用品", "laptop for the new hire", "差旅报销 上海", "server rack", "会议室设备"]
TRACE_EVENTS = ["node_entered", "task_created", "job_enqueued", "task_completed", "node_left"]


def definition() -> dict[str, Any]:
    """start → step1 … step8 (approvals) → end, with a small form."""
    nodes: list[dict[str, Any]] = [{"key": "start", "type": "start"}]
    nodes += [
        {"key": k, "type": "approval", "assignees": {"users": [USERS[n]]}}
        for n, k in enumerate(NODES)
    ]
    nodes.append({"key": "end", "type": "end"})
    keys = [n["key"] for n in nodes]
    return {
        "key": DEFINITION_KEY,
        "name": "Purchase request",
        "form": {
            "fields": [
                {"key": "amount", "type": "number", "required": True},
                {"key": "note", "type": "string"},
                {"key": "applicant", "type": "string"},
            ]
        },
        "nodes": nodes,
        "edges": [{"from": a, "to": b} for a, b in itertools.pairwise(keys)],
    }


@dataclass
class FillReport:
    instances: int = 0
    tasks: int = 0
    tokens: int = 0
    trace: int = 0
    jobs: int = 0
    first_id: int = 0
    by_status: dict[str, int] = field(default_factory=dict)


@dataclass
class _Ids:
    instance: int
    task: int
    token: int
    trace: int
    job: int


def _pick(rng: random.Random) -> str:
    roll = rng.randrange(1000)
    for status, weight in STATUSES:
        roll -= weight
        if roll < 0:
            return status
    return STATUSES[-1][0]


Rows = dict[str, list[dict[str, Any]]]
Deployed = dict[str, tuple[int, int, dict[str, Any]]]


def generate(
    n: int,
    *,
    now: datetime,
    definitions: Deployed,
    start: _Ids,
    seed: int = 7,
    form_note: Callable[[int], str] | None = None,
    children: bool = True,
) -> Iterator[Rows]:
    """Rows of every table for instances ``start.instance + 0 … n - 1``,
    ``CHUNK`` instances per yielded batch."""
    rng = random.Random(seed)
    tenants = sorted(definitions)
    ids = _Ids(**start.__dict__)
    span = timedelta(days=60).total_seconds()
    batch: Rows = {"instances": [], "tasks": [], "tokens": [], "trace": [], "jobs": []}
    for k in range(n):
        iid = ids.instance
        ids.instance += 1
        tenant = tenants[k % len(tenants)]
        def_id, version, snapshot = definitions[tenant]
        status = _pick(rng)
        live = status in ("running", "suspended")
        created = now - timedelta(seconds=span * (n - k) / n + 60)
        at = rng.randrange(1, 9) if live else (8 if status == "approved" else rng.randrange(1, 9))
        if live:
            updated = max(created, now - timedelta(minutes=rng.choice([1, 5, 30, 90, 600, 4000])))
            finished = None
        else:
            updated = min(created + timedelta(minutes=rng.randrange(5, 3000)), now)
            finished = updated
        trace_id = f"{seed:04x}{iid:028x}"
        erroring = live and rng.random() < 0.04
        note = form_note(k) if form_note else NOTES[k % len(NOTES)]
        batch["instances"].append(
            {
                "id": iid,
                "tenant_id": tenant,
                "definition_id": def_id,
                "definition_key": DEFINITION_KEY,
                "definition_version": version,
                "snapshot": snapshot,
                "status": status,
                "form_data": {
                    "amount": rng.randrange(10, 50_000),
                    "note": note,
                    "applicant": USERS[k % len(USERS)],
                },
                "initiator": USERS[(k * 7) % len(USERS)],
                "parent_instance_id": iid - rng.randrange(1, 50)
                if k > 50 and rng.random() < 0.05
                else None,
                "parent_task_id": None,
                "trace_id": trace_id,
                "error": "trigger step3 failed: HTTP 502 from erp" if erroring and k % 2 else None,
                "created_at": created,
                "updated_at": updated,
                "finished_at": finished,
            }
        )
        if not children:
            if len(batch["instances"]) >= CHUNK:
                yield batch
                batch = {"instances": [], "tasks": [], "tokens": [], "trace": [], "jobs": []}
            continue
        visited = NODES[:at]
        current = visited[-1]
        # ~8 tokens: one per visited node (plus returns), the last active if live
        for t in range(8):
            node = visited[min(t, len(visited) - 1)] if t < len(visited) else visited[t % at]
            last = t == 7
            batch["tokens"].append(
                {
                    "id": ids.token,
                    "instance_id": iid,
                    "node_key": current if last else node,
                    "state": "active" if (live and last) else "consumed",
                    "fork_stack": [],
                    "created_at": created + timedelta(seconds=t),
                    "consumed_at": None if (live and last) else updated,
                }
            )
            ids.token += 1
        # ~10 tasks: completed along the way, cc tasks, one pending at the current node
        for t in range(10):
            last = t == 9
            node = current if last else visited[t % at]
            pending = live and last
            status_t = "pending" if pending else ("cc" if t in (3, 6) else "completed")
            if not live and last and status != "approved":
                status_t = "canceled" if status in ("withdrawn", "canceled") else "completed"
            batch["tasks"].append(
                {
                    "id": ids.task,
                    "instance_id": iid,
                    "tenant_id": tenant,
                    "definition_key": DEFINITION_KEY,
                    "node_key": node,
                    "token_id": None,
                    "kind": "cc" if status_t == "cc" else "approval",
                    "status": status_t,
                    "assignee": USERS[(NODES.index(node) + t) % len(USERS)],
                    "action": None if status_t in ("pending", "cc", "canceled") else "approve",
                    "comment": None,
                    "due_at": None,
                    "created_at": created + timedelta(seconds=10 + t),
                    "finished_at": None if status_t in ("pending", "cc") else updated,
                    "finished_by": None,
                }
            )
            ids.task += 1
        for t in range(30):
            batch["trace"].append(
                {
                    "id": ids.trace,
                    "instance_id": iid,
                    "trace_id": trace_id,
                    "event": TRACE_EVENTS[t % len(TRACE_EVENTS)],
                    "node_key": visited[t % at],
                    "token_id": None,
                    "task_id": None,
                    "job_id": None,
                    "detail": {"n": t},
                    # the last step is the instance's last progress
                    "created_at": created + (updated - created) * t / 29,
                }
            )
            ids.trace += 1
        for t in range(5):
            job_status = "succeeded"
            error = None
            if live and t == 4:
                job_status = "dead" if erroring else "pending"
                error = "HTTP 502 from https://erp.example/orders" if erroring else None
            batch["jobs"].append(
                {
                    "id": ids.job,
                    "type": ["task_timeout", "event_dispatch", "trigger_dispatch"][t % 3],
                    "pool": "workflow-ledger",
                    "status": job_status,
                    "payload": {"instanceId": iid},
                    "tenant_id": tenant,
                    "instance_id": iid,
                    "node_key": visited[t % at],
                    "priority": 100,
                    "run_at": created + timedelta(seconds=t),
                    "attempts": 1,
                    "max_attempts": 5,
                    "generation": 1,
                    "execution_timeout_ms": 600_000,
                    "operation_key": f"mon{ids.job}",
                    "trace_id": trace_id,
                    "last_error": error,
                    "last_error_code": "error" if error else None,
                    "created_at": created + timedelta(seconds=t),
                    "updated_at": updated,
                }
            )
            ids.job += 1
        if len(batch["instances"]) >= CHUNK:
            yield batch
            batch = {"instances": [], "tasks": [], "tokens": [], "trace": [], "jobs": []}
    if batch["instances"]:
        yield batch


TABLES: dict[str, Table] = {
    "instances": workflow_instances,
    "tasks": workflow_tasks,
    "tokens": workflow_tokens,
    "trace": workflow_trace,
    "jobs": workflow_jobs,
}


async def _next_ids(db: Database) -> _Ids:
    async with db.read() as conn:
        values = [
            int((await conn.execute(select(func.coalesce(func.max(t.c.id), 0)))).scalar_one()) + 1
            for t in (
                workflow_instances,
                workflow_tasks,
                workflow_tokens,
                workflow_trace,
                workflow_jobs,
            )
        ]
    return _Ids(*values)


async def deploy_definitions(db: Database, tenants: Sequence[str]) -> Deployed:
    """Deploy the definition in every tenant: tenant → (id, version, snapshot)."""
    engine = Engine(db)
    out: Deployed = {}
    for tenant in tenants:
        row = await engine.deploy(definition(), actor="bench", tenant=tenant)
        async with db.read() as conn:
            source = (
                await conn.execute(
                    select(workflow_definitions.c.source).where(
                        workflow_definitions.c.id == row["id"]
                    )
                )
            ).scalar_one()
        out[tenant] = (int(row["id"]), int(row["version"]), dict(source))
    return out


def _copy_value(value: Any) -> Any:
    if isinstance(value, dict | list):
        return json.dumps(value, ensure_ascii=False)
    return value


async def _copy_pg(db: Database, batches: Iterator[Rows]) -> None:
    async with await psycopg.AsyncConnection.connect(libpq_conninfo(db.url)) as conn:
        async with conn.cursor() as cur:
            for batch in batches:
                for name, rows in batch.items():
                    if not rows:
                        continue
                    cols = list(rows[0])
                    sql = f"COPY {TABLES[name].name} ({', '.join(cols)}) FROM STDIN"
                    async with cur.copy(sql) as copy:
                        for row in rows:
                            await copy.write_row([_copy_value(row[c]) for c in cols])
            for table in TABLES.values():
                await cur.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                    f"(SELECT COALESCE(MAX(id), 1) FROM {table.name}))"
                )
        await conn.commit()
        await conn.set_autocommit(True)
        for table in TABLES.values():
            await conn.execute(f"VACUUM ANALYZE {table.name}")


async def _insert_sqlite(db: Database, batches: Iterator[Rows]) -> None:
    for batch in batches:
        async with db.begin() as conn:
            for name, rows in batch.items():
                if rows:
                    await conn.execute(insert(TABLES[name]), rows)
    async with db.begin() as conn:
        await conn.execute(text("ANALYZE"))


async def fill_instances(
    db: Database,
    n: int,
    *,
    now: datetime,
    tenants: Sequence[str] = ("acme", "globex", "initech"),
    seed: int = 7,
    form_note: Callable[[int], str] | None = None,
    children: bool = True,
) -> FillReport:
    """Fill ``n`` instances with their tasks, tokens, trace rows and jobs
    (``children=False``: the instance rows only)."""
    definitions = await deploy_definitions(db, tenants)
    start = await _next_ids(db)
    report = FillReport(first_id=start.instance)

    def counted() -> Iterator[Rows]:
        for batch in generate(
            n,
            now=now,
            definitions=definitions,
            start=start,
            seed=seed,
            form_note=form_note,
            children=children,
        ):
            report.instances += len(batch["instances"])
            report.tasks += len(batch["tasks"])
            report.tokens += len(batch["tokens"])
            report.trace += len(batch["trace"])
            report.jobs += len(batch["jobs"])
            for row in batch["instances"]:
                report.by_status[row["status"]] = report.by_status.get(row["status"], 0) + 1
            yield batch

    if db.is_sqlite:
        await _insert_sqlite(db, counted())
    else:
        await _copy_pg(db, counted())
    return report
