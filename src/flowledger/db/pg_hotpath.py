"""The PostgreSQL hot path of the ledger: claim and batch success settlement
on a dedicated psycopg connection (autocommit, server-side prepared
statements of one fixed shape each), without the per-call cost of pool
checkout and statement construction. A worker opens one per pool and one for
its settler. Semantics are exactly those of :mod:`flowledger.db.claim` and
:func:`flowledger.ledger.settle.jobs_settle_many` (same fences, same rows);
the conformance tests run both.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

import psycopg
from psycopg.rows import dict_row
from psycopg.types.json import Jsonb

from flowledger.db.claim import pg_claim_sql

_SETTLE_SQL = """
WITH input AS (
    SELECT * FROM unnest(%(ids)s::bigint[], %(gens)s::int[], %(tokens)s::text[],
                         %(exec_ids)s::bigint[], %(durations)s::int[], %(skipped)s::bool[],
                         %(results)s::jsonb[])
        AS t(id, gen, token, exec_id, duration, skipped, result)
), settled AS (
    UPDATE workflow_jobs AS j SET
        status = 'succeeded', result = input.result, last_error = NULL,
        last_error_code = NULL, last_error_fingerprint = NULL,
        lease_token = NULL, lease_until = NULL, lease_owner = NULL,
        updated_at = %(now)s
    FROM input
    WHERE j.id = input.id AND j.generation = input.gen AND j.lease_token = input.token
      AND j.status = 'running'
    RETURNING j.id
), attempts AS (
    UPDATE workflow_job_executions AS e SET
        status = CASE WHEN input.skipped THEN 'skipped' ELSE 'succeeded' END,
        finished_at = %(now)s, duration_ms = input.duration
    FROM input JOIN settled ON settled.id = input.id
    WHERE e.id = input.exec_id AND e.status = 'running'
    RETURNING e.id
)
SELECT id FROM settled
"""


@dataclass(frozen=True)
class SuccessRow:
    job_id: int
    generation: int
    lease_token: str
    execution_id: int
    duration_ms: int
    skipped: bool
    result: Any


class PgHotPath:
    """One dedicated autocommit connection; reconnects after a failure."""

    def __init__(self, conninfo: str) -> None:
        self.conninfo = conninfo
        self._conn: psycopg.AsyncConnection[dict[str, Any]] | None = None
        self._lock = asyncio.Lock()

    async def _connection(self) -> psycopg.AsyncConnection[dict[str, Any]]:
        if self._conn is None or self._conn.closed:
            self._conn = await psycopg.AsyncConnection.connect(
                self.conninfo, autocommit=True, prepare_threshold=0, row_factory=dict_row
            )
        return self._conn

    async def _run(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        async with self._lock:
            conn = await self._connection()
            try:
                cursor = await conn.execute(sql.encode(), params)
                return await cursor.fetchall()
            except (psycopg.OperationalError, psycopg.InterfaceError):
                await conn.close()
                self._conn = None
                raise

    async def claim(
        self, *, pool: str, limit: int, node_id: str, now: datetime, lease_ms: int, order: str
    ) -> list[dict[str, Any]]:
        rows = await self._run(
            pg_claim_sql(order),
            {
                "pool": pool,
                "now": now,
                "limit": limit,
                "node": node_id,
                "lease_until": now + timedelta(milliseconds=lease_ms),
            },
        )
        for row in rows:
            row["started_at"] = now
        return rows

    async def settle_successes(self, rows: list[SuccessRow], *, now: datetime) -> set[int]:
        result = await self._run(
            _SETTLE_SQL,
            {
                "ids": [r.job_id for r in rows],
                "gens": [r.generation for r in rows],
                "tokens": [r.lease_token for r in rows],
                "exec_ids": [r.execution_id for r in rows],
                "durations": [r.duration_ms for r in rows],
                "skipped": [r.skipped for r in rows],
                "results": [None if r.result is None else Jsonb(r.result) for r in rows],
                "now": now,
            },
        )
        return {int(row["id"]) for row in result}

    async def close(self) -> None:
        if self._conn is not None and not self._conn.closed:
            await self._conn.close()
        self._conn = None
