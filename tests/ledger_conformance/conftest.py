"""The ledger driver conformance fixtures (issue 16 item 2), in the spirit of
River's ``riverdrivertest``: every case runs once per implementation —
``sqlite`` (SqliteLedger), ``sqlite-fast`` (SqliteFastLedger: the same
claim and settlement on a dedicated connection and thread), ``postgresql-core`` (the shared Core
implementation on PostgreSQL), ``postgresql`` (PostgresLedger: the
single-statement claim and settlement over the pool) and ``postgresql-fast``
(PostgresFastLedger: the same statements over a dedicated connection).
``backend`` follows the driver, so ``db`` is a fresh database of its
dialect."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from flowledger.db.database import Database
from flowledger.db.pg_hotpath import PgHotPath
from flowledger.db.sqlite_hotpath import SqliteHotPath
from flowledger.ledger.driver import (
    CoreLedger,
    LedgerDriver,
    PostgresFastLedger,
    PostgresLedger,
    SqliteFastLedger,
    SqliteLedger,
)

DRIVERS = ["sqlite", "sqlite-fast", "postgresql-core", "postgresql", "postgresql-fast"]


@pytest.fixture(params=DRIVERS)
def driver_kind(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def backend(driver_kind: str) -> str:
    return "sqlite" if driver_kind.startswith("sqlite") else "postgresql"


@pytest.fixture
async def driver(driver_kind: str, db: Database) -> AsyncIterator[LedgerDriver]:
    made: LedgerDriver
    if driver_kind == "sqlite":
        made = SqliteLedger()
    elif driver_kind == "sqlite-fast":
        hot = db.hot_path()
        assert isinstance(hot, SqliteHotPath)
        made = SqliteFastLedger(hot)
    elif driver_kind == "postgresql-core":
        made = CoreLedger()
    elif driver_kind == "postgresql":
        made = PostgresLedger()
    else:
        pg_hot = db.hot_path()
        assert isinstance(pg_hot, PgHotPath)
        made = PostgresFastLedger(pg_hot)
    try:
        yield made
    finally:
        await made.close()
