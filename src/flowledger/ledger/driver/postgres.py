"""The ledger on PostgreSQL. What differs from the portable Core is claim
and batch success settlement: each is one data-modifying CTE
(:mod:`flowledger.ledger.driver.postgres_sql`), atomic on its own, run in autocommit in one
round trip. A bulk insert is one statement of fixed text per batch
(``unnest`` arrays; a JSON document up to 64 rows), in the caller's
transaction, which also publishes the wake hints of the pools it gave jobs.
In a step's transaction, the receipt with the attempt's settlement
(``receipt_put_and_settle``) and the caller's row lock with the fenced job
lock (``job_lock_fenced_receipt_first``: the row a ``MATERIALIZED`` CTE,
locked first) are one statement each.

:class:`PostgresLedger` sends those statements over a pooled autocommit
connection; :class:`PostgresFastLedger` (the hot path of a worker's pools
and settler) sends the same text over its own dedicated
:class:`~flowledger.db.pg_hotpath.PgHotPath` connection with server-side
prepared statements. One statement per operation, two transports.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import Select, Update, bindparam, exists, select, true
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db import wake
from flowledger.db.database import Database, Rider, RiderSource, ride_in_front
from flowledger.db.pg_hotpath import PgHotPath
from flowledger.db.schema import workflow_job_effects as effects
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import LeaseLostError
from flowledger.ledger.driver.core import CoreLedger
from flowledger.ledger.driver.core_registry import (
    FENCE_HOLDS,
    FENCE_NAMES,
    JOB_WITH_RECEIPT,
    fence_params,
)
from flowledger.ledger.driver.job_values import BATCH_COLUMNS, duration_ms, is_plain_success
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
    settle_one_with_receipt_params,
    settle_success_params,
)
from flowledger.ledger.driver.protocol import FIRST_LOCK, FIRST_WRITE
from flowledger.ledger.models import Fence, Outcome, OutcomeKind, SuccessRow


def _settle_params(rows: Sequence[SuccessRow], now: datetime) -> dict[str, Any]:
    return settle_success_params(
        ids=[r.job_id for r in rows],
        gens=[r.generation for r in rows],
        tokens=[r.lease_token for r in rows],
        exec_ids=[r.execution_id for r in rows],
        durations=[r.duration_ms for r in rows],
        skipped=[r.skipped for r in rows],
        results=[r.result for r in rows],
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

    async def _insert_rows_then(
        self, conn: AsyncConnection, rows: Sequence[dict[str, Any]], then: Rider
    ) -> dict[int, int]:
        """The JSON insert with ``then``'s CTEs after it."""
        if len(rows) > JSON_INSERT_MAX_ROWS:
            raise ValueError(f"rows ride on an insert of at most {JSON_INSERT_MAX_ROWS} jobs")
        then_sql, then_params = then
        given = "id" in rows[0]
        columns = tuple(n for n in rows[0] if n not in BATCH_COLUMNS and n != "id")
        sql = insert_jobs_json_sql(columns, BATCH_COLUMNS, then_sql, given_ids=given)
        params = insert_jobs_json_params(columns, BATCH_COLUMNS, rows, conn.dialect)
        clash = set(params) & set(then_params)
        if clash:
            raise ValueError(f"the riding rows' parameters {sorted(clash)} clash with the insert's")
        return await self._inserted(conn, sql, {**params, **then_params})

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
        then: RiderSource | None = None,
    ) -> bool:
        """A plain success and the receipt in one statement (the receipt only
        when the fenced settlement took), with what ``then`` hands over riding
        in front of it; other outcomes, and a receipt that confirms a side
        effect, as in Core."""
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
        params = settle_one_with_receipt_params(
            job_id=fence.job_id,
            gen=fence.generation,
            token=fence.lease_token,
            exec_id=fence.execution_id,
            duration=None if started_at is None else duration_ms(started_at, now),
            skipped=outcome.kind is OutcomeKind.SKIPPED,
            result=outcome.result,
            operation_key=operation_key,
            step_key=step_key,
            receipt=result,
            now=now,
        )
        sql = SETTLE_ONE_WITH_RECEIPT_SQL
        rider = None if then is None else await then()
        if rider is not None:  # the caller's rows ride on the settlement: one round trip
            sql, params = ride_in_front(sql, params, rider)
        settled = await conn.exec_driver_sql(sql, params)
        return settled.first() is not None

    async def job_lock_fenced_receipt_first(
        self,
        conn: AsyncConnection,
        first: Select[Any],
        first_params: Mapping[str, Any],
        fence: Fence,
        operation_key: str,
        step_key: str,
        *,
        now: datetime,
        then: Update | None = None,
        then_params: Mapping[str, Any] | None = None,
    ) -> tuple[dict[str, Any] | None, bool, Any]:
        """One statement: ``first`` as a ``MATERIALIZED`` CTE joined to the
        fenced job row, which is locked (``FOR UPDATE OF workflow_jobs``) only
        as the joined row leaves the join — after the CTE has locked
        ``first``'s row, so the lock order stays L-13's. ``then`` is a CTE
        too, which reads ``first``'s (locked) row, so it writes after that
        lock and before the job's; it writes nothing when the step's
        receipt exists."""
        merged = _with_first(first, then)
        params = {**first_params, **(then_params or {})}
        params.update(fence_params(fence, operation_key, step_key, now))
        row = (await conn.execute(merged.statement, params)).mappings().first()
        if row is None:
            raise LeaseLostError(f"job {fence.job_id} is no longer owned by this executor")
        keys = merged.first_keys
        locked = {key: row[key] for key in keys} if row[keys[0]] is not None else None
        if locked is not None and merged.then_keys:
            labels = merged.then_keys
            written = row[labels[0][1]] is not None
            locked[FIRST_WRITE] = {key: row[label] for key, label in labels} if written else None
        found = row[_RECEIPT_ID] is not None
        return (locked, found, row[_RESULT] if found else None)


_JOB_ID, _RECEIPT_ID, _RESULT = "fence_job_id", "fence_receipt_id", "fence_result"
_THEN_PREFIX = "then_"
_MERGED_ATTR = "_flowledger_with_first"  # the merged statements, kept on their first query
_PRIOR = effects.alias("prior_receipt")


@dataclass(frozen=True)
class _Merged:
    statement: Select[Any]
    first_keys: list[str]
    then_keys: list[tuple[str, str]]  # (the write's column key, its label in the row)


def _with_first(first: Select[Any], then: Update | None) -> _Merged:
    """The merged statement of ``first`` (and ``then``), built once per pair
    of query objects."""
    built: dict[Update | None, _Merged] = getattr(first, _MERGED_ATTR, None) or {}
    hit = built.get(then)
    if hit is not None:
        return hit
    cte = first.cte(FIRST_LOCK).prefix_with("MATERIALIZED")
    keys = [c.key for c in cte.c]
    names = {*keys, *first.compile().params}
    columns: list[Any] = [*cte.c]
    source = JOB_WITH_RECEIPT.outerjoin(cte, true())
    then_keys: list[tuple[str, str]] = []
    if then is not None:
        # no receipt, no write (a retried operation reuses what it committed)
        gated = then.where(
            ~exists().where(
                _PRIOR.c.operation_key == bindparam("operation_key"),
                _PRIOR.c.step_key == bindparam("step_key"),
            )
        )
        write = gated.cte(FIRST_WRITE)
        then_keys = [(c.key, _THEN_PREFIX + c.key) for c in write.c]
        columns += [write.c[key].label(label) for key, label in then_keys]
        names |= {label for _, label in then_keys} | set(then.compile().params)
        source = source.outerjoin(write, true())
    clash = names & {_JOB_ID, _RECEIPT_ID, _RESULT, *FENCE_NAMES}
    if clash:
        raise ValueError(f"the first lock's names {sorted(clash)} are the fence's")
    statement = (
        select(
            jobs.c.id.label(_JOB_ID),
            effects.c.id.label(_RECEIPT_ID),
            effects.c.result.label(_RESULT),
            *columns,
        )
        .select_from(source)
        .where(*FENCE_HOLDS)
        .with_for_update(of=jobs)
    )
    merged = _Merged(statement, keys, then_keys)
    # statements are immutable: built once per pair
    setattr(first, _MERGED_ATTR, {**built, then: merged})
    return merged


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
