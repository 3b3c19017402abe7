"""Row builders for the ops tests: ledger rows inserted directly with
SQLAlchemy, so every time and state is exactly what a test says. Each
builder commits in its own transaction and returns the new id."""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import insert

from flowledger.db.database import Database
from flowledger.db.schema import system_scheduler_nodes as nodes
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.fingerprint import fingerprint

_keys = itertools.count(1)

# start -> manager (an approval task for mia) -> end
APPROVAL = {
    "key": "leave",
    "name": "Leave",
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "manager", "type": "approval", "assignees": {"users": ["mia"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [{"from": "start", "to": "manager"}, {"from": "manager", "to": "end"}],
}


def job_row(now: datetime, **values: Any) -> dict[str, Any]:
    """A complete ``workflow_jobs`` row (pending, due at ``now``) with overrides;
    ``last_error`` gets its fingerprint unless one is given."""
    key = next(_keys)
    row: dict[str, Any] = {
        "type": "webhook_delivery",
        "pool": "workflow-ledger-outbound",
        "status": "pending",
        "payload": {},
        "tenant_id": "default",
        "priority": 100,
        "run_at": now,
        "attempts": 0,
        "max_attempts": 5,
        "generation": 1,
        "execution_timeout_ms": 600_000,
        "operation_key": f"op-{key}",
        "trace_id": f"trace-{key}",
        "created_at": now,
        "updated_at": now,
    }
    row.update(values)
    if row.get("last_error") and "last_error_fingerprint" not in values:
        row["last_error_fingerprint"] = fingerprint(row["last_error"])
    return row


async def add_job(db: Database, now: datetime, **values: Any) -> int:
    async with db.begin() as conn:
        result = await conn.execute(insert(jobs).values(**job_row(now, **values)))
        return int(result.inserted_primary_key[0])


async def add_jobs(db: Database, rows: Sequence[dict[str, Any]]) -> None:
    """Bulk insert complete rows (see :func:`job_row`) in chunks."""
    for offset in range(0, len(rows), 500):
        async with db.begin() as conn:
            await conn.execute(insert(jobs), list(rows[offset : offset + 500]))


async def add_execution(
    db: Database,
    job_id: int,
    *,
    scheduled_at: datetime,
    started_at: datetime,
    status: str = "succeeded",
    generation: int = 1,
    attempt: int = 1,
    duration_ms: int | None = None,
    **values: Any,
) -> int:
    async with db.begin() as conn:
        result = await conn.execute(
            insert(executions).values(
                job_id=job_id,
                generation=generation,
                attempt=attempt,
                status=status,
                scheduled_at=scheduled_at,
                started_at=started_at,
                duration_ms=duration_ms,
                **values,
            )
        )
        return int(result.inserted_primary_key[0])


async def add_node(
    db: Database,
    node_id: str,
    *,
    heartbeat_at: datetime,
    roles: Sequence[str] = ("worker",),
    pools: dict[str, int] | None = None,
    slots_in_use: int = 0,
    status: str = "active",
) -> None:
    pools = {"workflow-ledger": 4, "workflow-ledger-outbound": 4} if pools is None else pools
    async with db.begin() as conn:
        await conn.execute(
            insert(nodes).values(
                id=node_id,
                hostname="host",
                pid=1,
                roles=list(roles),
                pools=pools,
                slots_capacity=sum(pools.values()),
                slots_in_use=slots_in_use,
                status=status,
                started_at=heartbeat_at,
                heartbeat_at=heartbeat_at,
            )
        )
