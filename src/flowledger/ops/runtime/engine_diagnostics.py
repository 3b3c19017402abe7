"""Engine diagnostics, the read model (SPEC O-18): the engine's state at one
database time, for ``GET /api/workflows/engine/diagnostics``.

- **nodes**: the live nodes, as the runtime status (L-23) counts them — one
  row per process start (``system_scheduler_nodes``) with a heartbeat in the
  last 10 minutes — with roles, pools and their capacity, slots in use,
  status and heartbeat age; ``active`` when the status is active and the
  heartbeat is at most 90 s old (a process killed without stopping drops to
  ``active: false`` after 90 s and out of the list after 10 min). Served by
  ``ix_system_scheduler_nodes_heartbeat``.
- **leaders**: every leader lease row (``workflow-jobs-drain``, and any other
  cluster-wide task) with its holder and whether the lease is still valid.
- **drain** / **schedulePlanner**: the last run of each, as it records
  itself in ``system_task_runs`` (node, time, duration, summary — the
  drain's says how many jobs it reclaimed to pending and to dead, and
  which); null before the first run.
- **outbox**: pending and failed rows and the oldest pending one
  (``ix_workflow_event_outbox_status``).
- **settings**: what governs the ledger in this process (slots, poll, lease,
  renew, heartbeat, drain intervals, shutdown grace) and every job type the
  caller's runtime knows, with its pool and budget.
- **queue**: job counts by type x status (``ix_workflow_jobs_status_type``;
  at volume a terminal status is the planner's estimate, marked ``estimated``),
  the oldest *due* pending job per type, and per pool the pending, due and
  running counts with the oldest due ``runAt`` — every pending job read once,
  grouped by (pool, type), the pools' and types' figures summed from those
  few groups (``ix_workflow_jobs_claim_due``); running per pool by
  ``ix_workflow_jobs_running_lease``.
- **pausedScopes**: the paused pools and job types (issue 31 item 3), with
  who paused each, why and since when; claims skip their pending jobs.

Tenant scope (A-3): job and outbox figures count only the caller's tenants
(``tenants=None``: all; a scoped caller then never sees system jobs without
a tenant); nodes, leases, system tasks and settings are engine-wide and have
no tenant; so are paused scopes. No query per row. Never writes.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox as outbox
from flowledger.db.schema import system_leader_leases as leases
from flowledger.db.schema import system_scheduler_nodes as nodes
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.pauses import pauses_list
from flowledger.ledger.task_runs import task_runs_list
from flowledger.ledger.types import JobType
from flowledger.ops.jobs.queries import type_status_counts
from flowledger.ops.runtime.status import ACTIVE_WINDOW, LIVE_WINDOW
from flowledger.settings import Settings
from flowledger.worker.services import DRAIN_TASK

MAX_NODES = 200
PLANNER_TASK = "schedule_planner"  # handlers.services.SchedulePlanner.name
LEDGER_SETTINGS = (
    "ledger_slots",
    "outbound_slots",
    "poll_interval_s",
    "lease_ms",
    "lease_renew_interval_s",
    "heartbeat_interval_s",
    "drain_interval_s",
    "shutdown_grace_s",
)


def _age_s(now: datetime, then: datetime | None) -> float | None:
    return None if then is None else round((now - then).total_seconds(), 3)


def _scoped(query: Any, column: Any, tenants: Sequence[str] | None) -> Any:
    return query if tenants is None else query.where(column.in_(list(tenants)))


async def _nodes(conn: AsyncConnection, now: datetime) -> list[dict[str, Any]]:
    rows = (
        await conn.execute(
            select(nodes)
            .where(nodes.c.heartbeat_at >= now - LIVE_WINDOW)
            .order_by(nodes.c.heartbeat_at.desc(), nodes.c.id)
            .limit(MAX_NODES)
        )
    ).mappings()
    out = []
    for row in rows:
        age = _age_s(now, row["heartbeat_at"]) or 0.0
        out.append(
            {
                "id": row["id"],
                "hostname": row["hostname"],
                "pid": row["pid"],
                "roles": row["roles"],
                "pools": row["pools"],
                "slots_capacity": row["slots_capacity"],
                "slots_in_use": row["slots_in_use"],
                "started_at": row["started_at"],
                "heartbeat_at": row["heartbeat_at"],
                "heartbeat_age_s": age,
                "status": row["status"],
                "active": row["status"] == "active" and row["heartbeat_at"] >= now - ACTIVE_WINDOW,
            }
        )
    return out


async def _leaders(conn: AsyncConnection, now: datetime) -> list[dict[str, Any]]:
    rows = (await conn.execute(select(leases).order_by(leases.c.name))).all()
    return [
        {
            "name": r.name,
            "holder": r.holder,
            "lease_until": r.lease_until,
            "valid": r.lease_until > now,
        }
        for r in rows
    ]


async def _outbox(
    conn: AsyncConnection, now: datetime, tenants: Sequence[str] | None
) -> dict[str, Any]:
    counts = dict(
        (
            await conn.execute(
                _scoped(
                    select(outbox.c.status, func.count())
                    .where(outbox.c.status.in_(["pending", "failed"]))
                    .group_by(outbox.c.status),
                    outbox.c.tenant_id,
                    tenants,
                )
            )
        ).all()
    )
    oldest = (
        await conn.execute(
            _scoped(
                select(outbox.c.id, outbox.c.event_type, outbox.c.created_at)
                .where(outbox.c.status == "pending")
                .order_by(outbox.c.created_at, outbox.c.id)
                .limit(1),
                outbox.c.tenant_id,
                tenants,
            )
        )
    ).first()
    return {
        "pending": int(counts.get("pending", 0)),
        "failed": int(counts.get("failed", 0)),
        "oldest_pending": None
        if oldest is None
        else {
            "id": oldest.id,
            "event_type": oldest.event_type,
            "created_at": oldest.created_at,
            "age_s": _age_s(now, oldest.created_at),
        },
    }


async def _queue(
    conn: AsyncConnection, now: datetime, tenants: Sequence[str] | None
) -> dict[str, Any]:
    by_type_status = await type_status_counts(
        conn, _scoped(select(jobs.c.id), jobs.c.tenant_id, tenants)
    )
    rough = by_type_status.estimated_by_type  # type → statuses the planner estimated
    due_now = jobs.c.run_at <= now
    # every pending job read once: per (pool, type) how many, how many are
    # due and the oldest due run_at — the pools' and the types' figures are
    # sums and minimums of these few groups
    pending = (
        await conn.execute(
            _scoped(
                select(
                    jobs.c.pool,
                    jobs.c.type,
                    func.count(),
                    func.count().filter(due_now),
                    func.min(jobs.c.run_at).filter(due_now),
                )
                .where(jobs.c.status == "pending")
                .group_by(jobs.c.pool, jobs.c.type),
                jobs.c.tenant_id,
                tenants,
            )
        )
    ).all()
    running = (
        await conn.execute(
            _scoped(
                select(jobs.c.pool, func.count())
                .where(jobs.c.status == "running")
                .group_by(jobs.c.pool),
                jobs.c.tenant_id,
                tenants,
            )
        )
    ).all()
    pools: dict[str, dict[str, Any]] = {}
    types: dict[str, dict[str, Any]] = {}

    def pool(name: str) -> dict[str, Any]:
        return pools.setdefault(
            name,
            {"pool": name, "pending": 0, "due": 0, "running": 0, "oldest_due_run_at": None},
        )

    def earliest(a: datetime | None, b: datetime | None) -> datetime | None:
        return b if a is None else a if b is None else min(a, b)

    for pool_name, type_name, n, n_due, first_due in pending:
        entry = pool(pool_name)
        entry["pending"] += int(n)
        if n_due:
            entry["due"] += int(n_due)
            entry["oldest_due_run_at"] = earliest(entry["oldest_due_run_at"], first_due)
            kind = types.setdefault(type_name, {"type": type_name, "run_at": None, "due": 0})
            kind["due"] += int(n_due)
            kind["run_at"] = earliest(kind["run_at"], first_due)
    for name, n in running:
        pool(name)["running"] = int(n)
    for entry in pools.values():
        entry["oldest_due_age_s"] = _age_s(now, entry["oldest_due_run_at"])
    return {
        "by_type_status": [
            {"type": t, "status": s, "count": n, "estimated": s in rough.get(t, ())}
            for t, counts in by_type_status.by_type.items()
            for s, n in sorted(counts.items())
            if n
        ],
        "oldest_due_by_type": [
            {**types[t], "age_s": _age_s(now, types[t]["run_at"])} for t in sorted(types)
        ],
        "pools": [pools[name] for name in sorted(pools)],
    }


def _run(runs: dict[str, dict[str, Any]], name: str, now: datetime) -> dict[str, Any] | None:
    run = runs.get(name)
    return None if run is None else {**run, "age_s": _age_s(now, run["finished_at"])}


def _settings(settings: Settings, job_types: Iterable[JobType]) -> dict[str, Any]:
    return {
        **{name: getattr(settings, name) for name in LEDGER_SETTINGS},
        "job_types": [
            {
                "name": t.name,
                "pool": t.pool,
                "max_attempts": t.max_attempts,
                "execution_timeout_ms": t.execution_timeout_ms,
                "priority": t.priority,
            }
            for t in job_types
        ],
    }


async def engine_diagnostics(
    db: Database,
    *,
    now: datetime,
    settings: Settings,
    job_types: Iterable[JobType] = (),
    tenants: Sequence[str] | None = None,
) -> dict[str, Any]:
    """The diagnostics at ``now`` (snake_case keys; the API renders camelCase);
    ``job_types`` are the types the caller's runtime knows (``runtime.job_types``)."""
    async with db.read() as conn:
        runs = await task_runs_list(conn)
        return {
            "now": now,
            "nodes": await _nodes(conn, now),
            "leaders": await _leaders(conn, now),
            "drain": _run(runs, DRAIN_TASK, now),
            "schedule_planner": _run(runs, PLANNER_TASK, now),
            "outbox": await _outbox(conn, now, tenants),
            "settings": _settings(settings, job_types),
            "queue": await _queue(conn, now, tenants),
            "paused_scopes": [p.__dict__ for p in await pauses_list(conn)],
        }
