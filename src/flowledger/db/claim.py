"""The claim statement (SPEC L-7), the one ledger statement whose shape truly
differs by dialect.

PostgreSQL: one statement, run in autocommit —
``WITH locked AS (SELECT … FOR UPDATE SKIP LOCKED LIMIT n), claimed AS (UPDATE …
RETURNING …), attempts AS (INSERT INTO workflow_job_executions …) SELECT …`` —
so the claim, its lease and its attempt rows commit together in one round trip
and concurrent claimers skip each other's rows.

SQLite: the caller holds the single writer lock (``BEGIN IMMEDIATE``); the
candidates are selected and updated in that transaction, which gives the same
exclusivity.

Both order by ``priority, run_at, id`` or, for the every-fourth "earliest due"
claim, by ``run_at, id``; both are served by partial indexes on pending rows.
"""

from __future__ import annotations

import uuid
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, select, text, tuple_, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.db.types import UTCDateTime

_RETURNED = (
    "id, type, pool, payload, generation, attempts, max_attempts, lease_token, lease_until, "
    "execution_deadline, run_at, operation_key, trace_id, tenant_id, instance_id, task_id, "
    "node_key, priority"
)

_PG_CLAIM = """
WITH locked AS (
    SELECT id FROM workflow_jobs
    WHERE pool = :pool AND status = 'pending' AND run_at <= :now
    ORDER BY {order}
    LIMIT :limit
    FOR UPDATE SKIP LOCKED
), claimed AS (
    UPDATE workflow_jobs AS j SET
        status = 'running',
        attempts = j.attempts + 1,
        lease_token = gen_random_uuid()::text,
        lease_owner = :node,
        execution_deadline = :now + j.execution_timeout_ms * interval '1 millisecond',
        lease_until = LEAST(:lease_until,
                            :now + j.execution_timeout_ms * interval '1 millisecond'),
        side_effect_at = NULL,
        updated_at = :now
    FROM locked WHERE j.id = locked.id
    RETURNING j.{returned}
), attempts AS (
    INSERT INTO workflow_job_executions
        (job_id, generation, attempt, status, node_id, scheduled_at, started_at)
    SELECT id, generation, attempts, 'running', :node, run_at, :now FROM claimed
    RETURNING id AS execution_id, job_id
)
SELECT claimed.*, attempts.execution_id
FROM claimed JOIN attempts ON attempts.job_id = claimed.id
ORDER BY {outer_order}
"""

_ORDERS = {
    "priority": ("priority, run_at, id", "claimed.priority, claimed.run_at, claimed.id"),
    "due": ("run_at, id", "claimed.run_at, claimed.id"),
}


def pg_claim_sql(order: str, *, paramstyle: str = "pyformat") -> str:
    """The PostgreSQL claim statement for ``order`` ("priority" or "due")."""
    inner, outer = _ORDERS[order]
    sql = _PG_CLAIM.format(order=inner, outer_order=outer, returned=_RETURNED.replace(", ", ", j."))
    if paramstyle == "pyformat":
        for name in ("pool", "now", "limit", "node", "lease_until"):
            sql = sql.replace(f":{name}", f"%({name})s")
    return sql


def _pg_statement(order: str) -> Any:
    return (
        text(pg_claim_sql(order, paramstyle="named"))
        .bindparams(
            bindparam("now", type_=UTCDateTime), bindparam("lease_until", type_=UTCDateTime)
        )
        .columns(lease_until=UTCDateTime, execution_deadline=UTCDateTime, run_at=UTCDateTime)
    )


_PG_STATEMENTS = {order: _pg_statement(order) for order in _ORDERS}


async def claim_rows(
    conn: AsyncConnection,
    *,
    pool: str,
    limit: int,
    node_id: str,
    now: datetime,
    lease_ms: int,
    order: str,
) -> list[dict[str, Any]]:
    """Claim up to ``limit`` due pending jobs of ``pool``; one attempt row each."""
    lease_until = now + timedelta(milliseconds=lease_ms)
    if conn.dialect.name == "postgresql":
        result = await conn.execute(
            _PG_STATEMENTS[order],
            {"pool": pool, "now": now, "limit": limit, "node": node_id, "lease_until": lease_until},
        )
        rows = [dict(r._mapping) for r in result]
        for row in rows:
            row["started_at"] = now
        return rows
    return await _sqlite_claim(
        conn, pool=pool, limit=limit, node_id=node_id, now=now, lease_until=lease_until, order=order
    )


async def _sqlite_claim(
    conn: AsyncConnection,
    *,
    pool: str,
    limit: int,
    node_id: str,
    now: datetime,
    lease_until: datetime,
    order: str,
) -> list[dict[str, Any]]:
    ordering = (
        (jobs.c.priority, jobs.c.run_at, jobs.c.id)
        if order == "priority"
        else (jobs.c.run_at, jobs.c.id)
    )
    candidates = (
        await conn.execute(
            select(jobs.c.id, jobs.c.execution_timeout_ms)
            .where(jobs.c.pool == pool, jobs.c.status == "pending", jobs.c.run_at <= now)
            .order_by(*ordering)
            .limit(limit)
        )
    ).all()
    if not candidates:
        return []
    params = []
    for job_id, timeout_ms in candidates:
        deadline = now + timedelta(milliseconds=timeout_ms)
        params.append(
            {
                "b_id": job_id,
                "b_token": uuid.uuid4().hex,
                "b_deadline": deadline,
                "b_lease_until": min(lease_until, deadline),
            }
        )
    await conn.execute(
        update(jobs)
        .where(jobs.c.id == bindparam("b_id"))
        .values(
            status="running",
            attempts=jobs.c.attempts + 1,
            lease_token=bindparam("b_token"),
            lease_owner=node_id,
            execution_deadline=bindparam("b_deadline"),
            lease_until=bindparam("b_lease_until"),
            side_effect_at=None,
            updated_at=now,
        ),
        params,
    )
    ids = [p["b_id"] for p in params]
    rows = [
        dict(r._mapping)
        for r in (
            await conn.execute(
                select(*(jobs.c[name] for name in _RETURNED.split(", ")))
                .where(jobs.c.id.in_(ids))
                .order_by(*ordering)
            )
        )
    ]
    inserted = await conn.execute(
        executions.insert().returning(executions.c.id, sort_by_parameter_order=True),
        [
            {
                "job_id": r["id"],
                "generation": r["generation"],
                "attempt": r["attempts"],
                "status": "running",
                "node_id": node_id,
                "scheduled_at": r["run_at"],
                "started_at": now,
            }
            for r in rows
        ],
    )
    for row, execution_id in zip(rows, inserted.scalars(), strict=True):
        row["execution_id"] = execution_id
        row["started_at"] = now
    return rows


def fence_clause(fences: list[tuple[int, int, str]]) -> Any:
    """``(id, generation, lease_token) IN (…) AND status = 'running'``."""
    return tuple_(jobs.c.id, jobs.c.generation, jobs.c.lease_token).in_(fences) & (
        jobs.c.status == "running"
    )
