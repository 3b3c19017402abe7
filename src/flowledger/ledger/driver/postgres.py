"""The ledger on PostgreSQL. What differs from the portable Core is claim
and batch success settlement: each is one data-modifying CTE
(:mod:`flowledger.ledger.driver.postgres_sql`), atomic on its own, run in autocommit in one
round trip. A bulk insert is one statement of fixed text per batch
(``unnest`` arrays; a JSON document up to 64 rows), in the caller's
transaction, which also publishes the wake hints of the pools it gave jobs.
In a step's transaction, the receipt with the attempt's settlement
(``receipt_put_and_settle``) is one statement. (A store that locks its own
rows before the job's composes the fence of
:mod:`~flowledger.ledger.driver.fence` into its own statement; one that
writes its own rows with the settlement or the insert composes the parts of
:mod:`~flowledger.ledger.driver.postgres_parts`.)

:class:`PostgresLedger` sends those statements over a pooled autocommit
connection; :class:`PostgresFastLedger` (the hot path of a worker's pools
and settler) sends the same text over its own dedicated
:class:`~flowledger.db.pg_hotpath.PgHotPath` connection with server-side
prepared statements. One statement per operation, two transports.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db import wake
from flowledger.db.database import Database
from flowledger.db.pg_hotpath import PgHotPath
from flowledger.ledger.driver.core import CoreLedger
from flowledger.ledger.driver.job_values import BATCH_COLUMNS, is_plain_success
from flowledger.ledger.driver.postgres_parts import settlement_params
from flowledger.ledger.driver.postgres_sql import (
    CLAIM_SQL,
    JSON_INSERT_MAX_ROWS,
    SETTLE_ONE_WITH_RECEIPT_SQL,
    SETTLE_SUCCESS_SQL,
    claim_params,
    insert_jobs_json_params,
    insert_jobs_json_sql,
    insert_jobs_params,
    insert_jobs_sql,
    settle_success_params,
)
from flowledger.ledger.models import Fence, Outcome, SuccessRow


def _settle_params(rows: Sequence[SuccessRow], now: datetime) -> dict[str, Any]:
    return settle_success_params(
        ids=[r.job_id for r in rows],
        gens=[r.generation for r in rows],
        tokens=[r.lease_token for r in rows],
        exec_ids=[r.execution_id for r in rows],
        durations=[r.duration_ms for r in rows],
        skipped=[r.skipped for r in rows],
        results=[r.result for r in rows],
        exec_starts=[r.execution_started_at for r in rows],
        now=now,
    )


class PostgresLedger(CoreLedger):
    """Claim and success settlement as single statements on the pool; bulk
    insert as one ``unnest`` statement."""

    name = "postgresql"

    async def _insert_rows(
        self, conn: AsyncConnection, rows: Sequence[dict[str, Any]]
    ) -> dict[int, int]:
        given = "id" in rows[0]  # ids the caller drew (jobs_insert(ids=…))
        columns = tuple(n for n in rows[0] if n not in BATCH_COLUMNS and n != "id")
        if len(rows) <= JSON_INSERT_MAX_ROWS or given:
            sql = insert_jobs_json_sql(columns, BATCH_COLUMNS, given_ids=given)
            params = insert_jobs_json_params(columns, BATCH_COLUMNS, rows, conn.dialect)
        else:
            sql = insert_jobs_sql(columns, BATCH_COLUMNS)
            params = insert_jobs_params(columns, BATCH_COLUMNS, rows, conn.dialect)
        return await self._inserted(conn, sql, params)

    async def _inserted(
        self, conn: AsyncConnection, sql: str, params: dict[str, Any]
    ) -> dict[int, int]:
        result = await conn.exec_driver_sql(sql, params)
        return {int(row["ord"]) - 1: int(row["id"]) for row in result.mappings()}

    async def _hint_inserted(self, conn: AsyncConnection, pool: str) -> None:
        wake.mark_hinted(conn, pool)  # the insert's own statement notified it

    async def _run(self, db: Database, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        async with db.single_statement() as conn:
            result = await conn.exec_driver_sql(sql, params)
            return [dict(row._mapping) for row in result]

    async def _claim_rows_due(
        self,
        db: Database,
        *,
        pool: str,
        limit: int,
        node_id: str,
        now: datetime,
        lease_ms: int,
        order: str,
    ) -> tuple[list[dict[str, Any]], bool, datetime | None]:
        """The claim statement's rows (one with NULL job columns when none
        was claimed) carry the pool's next due time."""
        params = claim_params(pool=pool, limit=limit, node_id=node_id, now=now, lease_ms=lease_ms)
        found = await self._run(db, CLAIM_SQL[order], params)
        due: datetime | None = found[0]["next_due"] if found else None
        if due is not None:
            due = due.astimezone(UTC)
        rows = [row for row in found if row["id"] is not None]
        for row in rows:
            row["started_at"] = now
            del row["next_due"]
        return rows, True, due

    async def _settle_successes(
        self, db: Database, rows: Sequence[SuccessRow], *, now: datetime
    ) -> set[int]:
        settled = await self._run(db, SETTLE_SUCCESS_SQL, _settle_params(rows, now))
        return {int(row["id"]) for row in settled}

    async def _settle_successes_tx(
        self, conn: AsyncConnection, rows: Sequence[SuccessRow], *, now: datetime
    ) -> set[int]:
        """The same one statement in the caller's transaction."""
        result = await conn.exec_driver_sql(SETTLE_SUCCESS_SQL, _settle_params(rows, now))
        return {int(row[0]) for row in result}

    async def receipt_put_and_settle(
        self,
        conn: AsyncConnection,
        fence: Fence,
        operation_key: str,
        step_key: str,
        result: Any,
        outcome: Outcome,
        *,
        now: datetime,
        started_at: datetime | None = None,
        confirm_side_effect: bool = False,
    ) -> bool:
        """A plain success and the receipt in one statement (the receipt only
        when the fenced settlement took); other outcomes, and a receipt that
        confirms a side effect, as in Core."""
        if confirm_side_effect or not is_plain_success(outcome):
            return await super().receipt_put_and_settle(
                conn,
                fence,
                operation_key,
                step_key,
                result,
                outcome,
                now=now,
                started_at=started_at,
                confirm_side_effect=confirm_side_effect,
            )
        params = settlement_params(
            fence, operation_key, step_key, result, outcome, now=now, started_at=started_at
        )
        settled = await conn.exec_driver_sql(SETTLE_ONE_WITH_RECEIPT_SQL, params)
        return settled.first() is not None


class PostgresFastLedger(PostgresLedger):
    """The same statements on one dedicated connection (one per pool and
    one per settler); :meth:`close` releases it."""

    name = "postgresql-fast"

    def __init__(self, hot: PgHotPath) -> None:
        self.hot = hot

    async def _run(self, db: Database, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        return await self.hot.run(sql, params)

    async def close(self) -> None:
        await self.hot.close()
