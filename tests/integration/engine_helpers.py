"""Helpers for engine tests: deploy definitions written as Python dicts, run
due ledger jobs in-process through the real handlers (claim → execute →
settle, exactly what a worker of the default runtime does), and read rows
back."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import (
    workflow_instances,
    workflow_tasks,
    workflow_tokens,
    workflow_trace,
)
from flowledger.db.schema import workflow_jobs
from flowledger.engine import Engine
from flowledger.states import Pool
from flowledger.worker.context import JobContext
from flowledger.worker.executor import execute
from tests.ledger_access import ledger_of
from tests.runtime_support import default_engine, runtime_for


def definition(
    key: str,
    nodes: list[dict[str, Any]],
    edges: list[tuple[str, str] | dict[str, Any]],
    form: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "key": key,
        "name": key,
        "form": {"fields": form or []},
        "nodes": nodes,
        "edges": [e if isinstance(e, dict) else {"from": e[0], "to": e[1]} for e in edges],
    }


def approval(key: str, *users: str, **extra: Any) -> dict[str, Any]:
    return {"key": key, "type": "approval", "assignees": {"users": list(users)}, **extra}


START = {"key": "start", "type": "start"}
END = {"key": "end", "type": "end"}


def forked_approvals(key: str) -> dict[str, Any]:
    """start → parallel fork → approvals ``a`` (ann) and ``b`` (bob) → join → end."""
    return definition(
        key,
        [
            START,
            {"key": "fork", "type": "parallel"},
            approval("a", "ann"),
            approval("b", "bob"),
            {"key": "join", "type": "parallel"},
            END,
        ],
        [
            ("start", "fork"),
            ("fork", "a"),
            ("fork", "b"),
            ("a", "join"),
            ("b", "join"),
            ("join", "end"),
        ],
    )


def parallel_delays(key: str) -> dict[str, Any]:
    """start → approval ``mgr`` (al) → parallel fork → 0-second delays
    ``left`` and ``right`` → join → end."""
    return definition(
        key,
        [
            START,
            approval("mgr", "al"),
            {"key": "fork", "type": "parallel"},
            {"key": "left", "type": "delay", "duration": "PT0S"},
            {"key": "right", "type": "delay", "duration": "PT0S"},
            {"key": "join", "type": "parallel"},
            END,
        ],
        [
            ("start", "mgr"),
            ("mgr", "fork"),
            ("fork", "left"),
            ("fork", "right"),
            ("left", "join"),
            ("right", "join"),
            ("join", "end"),
        ],
    )


async def run_due_jobs(db: Database, clock: ManualClock, *, rounds: int = 50) -> int:
    """Run every due job (and the jobs they cause) until none is due."""
    runtime = runtime_for(db, clock)  # the engine's handlers, policies on
    try:
        return await _run_due(db, clock, runtime.handlers, rounds)
    finally:
        await runtime.aclose()  # its outbound client


async def _run_due(db: Database, clock: ManualClock, handlers: Any, rounds: int) -> int:
    done = 0
    for _ in range(rounds):
        claimed = []
        for pool in (Pool.LEDGER, Pool.OUTBOUND):
            claimed += await ledger_of(db).jobs_claim(
                db, pool=pool, limit=100, node_id="test-node", now=clock.now()
            )
        if not claimed:
            return done
        for job in claimed:
            outcome = await execute(
                JobContext(job, db, clock), handlers.get(job.type), abort_grace_s=1.0
            )
            if outcome is not None:
                await ledger_of(db).jobs_settle(db, [(job, outcome)], now=clock.now())
            done += 1
    raise AssertionError("jobs kept coming after 50 rounds")


async def instance(db: Database, instance_id: int) -> dict[str, Any]:
    async with db.read() as conn:
        row = (
            (
                await conn.execute(
                    select(workflow_instances).where(workflow_instances.c.id == instance_id)
                )
            )
            .mappings()
            .one()
        )
    return dict(row)


async def tasks(db: Database, instance_id: int, **where: Any) -> list[dict[str, Any]]:
    query = select(workflow_tasks).where(workflow_tasks.c.instance_id == instance_id)
    for name, value in where.items():
        query = query.where(workflow_tasks.c[name] == value)
    async with db.read() as conn:
        rows = (await conn.execute(query.order_by(workflow_tasks.c.id))).mappings().all()
    return [dict(r) for r in rows]


async def tokens(db: Database, instance_id: int, state: str | None = None) -> list[dict[str, Any]]:
    query = select(workflow_tokens).where(workflow_tokens.c.instance_id == instance_id)
    if state is not None:
        query = query.where(workflow_tokens.c.state == state)
    async with db.read() as conn:
        rows = (await conn.execute(query.order_by(workflow_tokens.c.id))).mappings().all()
    return [dict(r) for r in rows]


async def jobs(db: Database, instance_id: int, **where: Any) -> list[dict[str, Any]]:
    query = select(workflow_jobs).where(workflow_jobs.c.instance_id == instance_id)
    for name, value in where.items():
        query = query.where(workflow_jobs.c[name] == value)
    async with db.read() as conn:
        rows = (await conn.execute(query.order_by(workflow_jobs.c.id))).mappings().all()
    return [dict(r) for r in rows]


async def trace_events(db: Database, instance_id: int) -> list[dict[str, Any]]:
    async with db.read() as conn:
        rows = (
            (
                await conn.execute(
                    select(workflow_trace)
                    .where(workflow_trace.c.instance_id == instance_id)
                    .order_by(workflow_trace.c.id)
                )
            )
            .mappings()
            .all()
        )
    return [dict(r) for r in rows]


async def pending_task(
    db: Database, instance_id: int, node_key: str, assignee: str | None = None
) -> int:
    found = [
        t
        for t in await tasks(db, instance_id, status="pending", node_key=node_key)
        if assignee is None or t["assignee"] == assignee
    ]
    assert len(found) == 1, found
    return int(found[0]["id"])


def new_engine(db: Database, clock: ManualClock) -> Engine:
    return default_engine(db, clock)
