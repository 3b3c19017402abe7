"""The ledger's storage driver (issue 16): :class:`LedgerDriver`, its shared
Core implementation and the two dialect drivers, and the one place that
picks a driver for a database — by the dialect name the ``db`` layer reports
(``Database.dialect``, :func:`flowledger.db.dialects.dialect_name`), never by
a branch of its own. The fast path exists where the ``db`` layer offers a
dedicated connection (:meth:`Database.hot_path`)."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.db.dialects import POSTGRESQL, SQLITE, dialect_name
from flowledger.db.pg_hotpath import PgHotPath
from flowledger.db.sqlite_hotpath import SqliteHotPath
from flowledger.ledger.driver.core import CoreLedger
from flowledger.ledger.driver.postgres import PostgresFastLedger, PostgresLedger
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.driver.sqlite import SqliteFastLedger, SqliteLedger

__all__ = [
    "CoreLedger",
    "LedgerDriver",
    "PostgresFastLedger",
    "PostgresLedger",
    "SqliteFastLedger",
    "SqliteLedger",
    "ledger_driver",
    "ledger_for",
]

_SHARED: dict[str, LedgerDriver] = {SQLITE: SqliteLedger(), POSTGRESQL: PostgresLedger()}


def ledger_for(conn: AsyncConnection) -> LedgerDriver:
    """The (stateless, shared) driver of ``conn``'s dialect."""
    return _SHARED[dialect_name(conn)]


def ledger_driver(db: Database, *, fast: bool = False) -> LedgerDriver:
    """The driver of ``db``. ``fast``: a driver with its own dedicated
    connection where the database offers one (PostgreSQL); the caller
    closes it (PostgreSQL: psycopg with prepared statements; SQLite: sync
    connections under the process's write lock). Without ``fast``, or where the
    database offers none, the shared driver."""
    if fast:
        hot = db.hot_path()
        if isinstance(hot, PgHotPath):
            return PostgresFastLedger(hot)
        if isinstance(hot, SqliteHotPath):
            return SqliteFastLedger(hot)
    return _SHARED[db.dialect]
