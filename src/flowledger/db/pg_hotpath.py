"""A dedicated PostgreSQL connection for the ledger's fast path: psycopg,
autocommit, server-side prepared statements (one fixed shape each; none
when the database sits behind a pooler that cannot carry them), without
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


class PgHotPath:
    """One dedicated autocommit connection; reconnects after a failure."""

    def __init__(self, conninfo: str, *, prepare_threshold: int | None = 0) -> None:
        """``prepare_threshold``: psycopg's — 0 prepares every statement at
        once, None never (a transaction-mode pooler that cannot carry
        server-side prepared statements, issue 34 item 5)."""
        self.conninfo = conninfo
        self.prepare_threshold = prepare_threshold
        self._conn: psycopg.AsyncConnection[dict[str, Any]] | None = None
        self._lock = asyncio.Lock()

    async def _connection(self) -> psycopg.AsyncConnection[dict[str, Any]]:
        if self._conn is None or self._conn.closed:
            self._conn = await psycopg.AsyncConnection.connect(
                self.conninfo,
                autocommit=True,
                prepare_threshold=self.prepare_threshold,
                row_factory=dict_row,
            )
        return self._conn

    async def run(self, sql: str, params: dict[str, Any]) -> list[dict[str, Any]]:
        """Run one self-contained statement; its rows as dicts."""
        async with self._lock:
            conn = await self._connection()
            try:
                cursor = await conn.execute(sql.encode(), params)
                return await cursor.fetchall()
            except (psycopg.OperationalError, psycopg.InterfaceError):
                await conn.close()
                self._conn = None
                raise

    async def close(self) -> None:
        if self._conn is not None and not self._conn.closed:
            await self._conn.close()
        self._conn = None
