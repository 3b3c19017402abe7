""":class:`SqliteLedger`: the ledger on SQLite. Every writing transaction
begins ``BEGIN IMMEDIATE`` under the process's write lock
(:class:`~flowledger.db.database.Database`), so the portable Core claim —
candidates selected and leased in one transaction — is already exclusive and
``FOR UPDATE`` compiles to nothing. Nothing differs from
:class:`~flowledger.ledger.driver.core.CoreLedger` in what is written.

:class:`SqliteFastLedger` (the hot path of a worker's pools and settler,
issue 15 item 4) runs the same claim and success-settlement plans
(:mod:`~flowledger.ledger.driver.plans`) on a dedicated
:class:`~flowledger.db.sqlite_hotpath.SqliteHotPath`: each transaction is one
hop to the hot path's thread instead of several per statement through the
async driver. Same statements, two transports."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from flowledger.db.database import Database
from flowledger.db.sqlite_hotpath import SqliteHotPath
from flowledger.ledger.driver import sqlite_sql
from flowledger.ledger.driver.core import CoreLedger
from flowledger.ledger.models import SuccessRow


class SqliteLedger(CoreLedger):
    name = "sqlite"


class SqliteFastLedger(SqliteLedger):
    """Claim and success settlement on one dedicated connection and thread;
    :meth:`close` releases them."""

    name = "sqlite-fast"

    def __init__(self, hot: SqliteHotPath) -> None:
        self.hot = hot

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
        rows, due = await self.hot.run(
            lambda conn: sqlite_sql.claim(
                conn,
                pool=pool,
                limit=limit,
                node_id=node_id,
                now=now,
                lease_ms=lease_ms,
                order=order,
            )
        )
        return rows, True, due

    async def _settle_successes(
        self, db: Database, rows: Sequence[SuccessRow], *, now: datetime
    ) -> set[int]:
        return await self.hot.run(
            lambda conn: sqlite_sql.settle_successes(
                conn,
                ids=[r.job_id for r in rows],
                gens=[r.generation for r in rows],
                tokens=[r.lease_token for r in rows],
                exec_ids=[r.execution_id for r in rows],
                durations=[r.duration_ms for r in rows],
                skipped=[r.skipped for r in rows],
                results=[r.result for r in rows],
                now=now,
            )
        )

    async def close(self) -> None:
        await self.hot.close()
