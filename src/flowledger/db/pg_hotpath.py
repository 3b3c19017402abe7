"""A dedicated PostgreSQL connection for the ledger's fast path: psycopg,
autocommit, server-side prepared statements run by their generic plans
(one fixed shape each, :data:`GENERIC_PLANS`; none when the database sits
behind a pooler that cannot carry them), without
the per-call cost of pool checkout and statement construction. It only
transports statements; what it runs is :mod:`flowledger.ledger.driver.postgres_sql`, the
same text :class:`~flowledger.ledger.driver.postgres.PostgresLedger` sends
over a pooled connection. A worker opens one per pool and one for its
settler (through ``PostgresFastLedger``).
"""

from __future__ import annotations

import asyncio
from typing import Any

import psycopg
from psycopg.rows import dict_row

#: Prepared statements run their generic plan from the first execution.
#: Left to choose (``plan_cache_mode = auto``), PostgreSQL kept planning the
#: claim and the settlement anew at every execution once the ledger held
#: months of history: on the volume benchmark the server log showed ~0.75 ms
#: of planning (``bind``) per claim and per settlement, 40 % of a drain's
#: time, against 0.04 ms on an empty database, where it had settled on the
#: generic plan. These are fixed shapes whose plan does not depend on their
#: values (the claim's partial indexes, the settlement's primary keys; the
#: attempts' partition is pruned at executor start-up from the batch's start
#: bounds), so the generic plan is the one to keep: 20,000-job drain on the
#: volume database 0.59-0.64x the empty one's rate before, 0.95-1.06x after;
#: on the empty database unchanged (four alternated rounds each).
GENERIC_PLANS = "SET plan_cache_mode = force_generic_plan"


class PgHotPath:
    """One dedicated autocommit connection; reconnects after a failure."""

    def __init__(self, conninfo: str, *, prepare_threshold: int | None = 0) -> None:
        """``prepare_threshold``: psycopg's — 0 prepares every statement at
        once, None never (a transaction-mode pooler that cannot carry
        server-side prepared statements, issue 34 item 5)."""
        self.conninfo = conninfo
        self.prepare_threshold = prepare_threshold
        self._conn: psycopg.AsyncConnection[dict[str, Any]] | None = None
        # one cursor for every statement of the connection: a new cursor per
        # call set up its adapters again (~10 % of a call's client CPU)
        self._cursor: psycopg.AsyncCursor[dict[str, Any]] | None = None
        self._lock = asyncio.Lock()

    async def _connected_cursor(self) -> psycopg.AsyncCursor[dict[str, Any]]:
        if self._conn is None or self._conn.closed or self._cursor is None:
            self._conn = await psycopg.AsyncConnection.connect(
                self.conninfo,
                autocommit=True,
                prepare_threshold=self.prepare_threshold,
                row_factory=dict_row,
            )
            if self.prepare_threshold is not None:
                await self._conn.execute(GENERIC_PLANS)
            self._cursor = self._conn.cursor()
        return self._cursor

    async def run(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Run one self-contained statement; its rows as dicts."""
        async with self._lock:
            cursor = await self._connected_cursor()
            try:
                await cursor.execute(sql.encode(), params)
                return await cursor.fetchall()
            except (psycopg.OperationalError, psycopg.InterfaceError):
                await cursor.connection.close()
                self._conn = self._cursor = None
                raise

    async def close(self) -> None:
        if self._conn is not None and not self._conn.closed:
            await self._conn.close()
        self._conn = self._cursor = None
