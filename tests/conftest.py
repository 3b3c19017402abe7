"""Shared fixtures. ``db`` runs a test once per backend (SQLite and
PostgreSQL), each on a fresh database with the declared schema; ``clock`` is a
ManualClock so tests move time instead of sleeping."""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import metadata
from tests.dbutil import database_url, drop_pool, pg_database, sqlite_database

BACKENDS = ["sqlite", "postgresql"]

# One secret key for the whole run, so that no test writes ./flowledger.key
# (tests that exercise the key file set their own settings).
os.environ.setdefault("FLOWLEDGER_SECRET_KEY", Fernet.generate_key().decode())


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def _create_schema(url: str) -> None:
    database = Database(url)
    async with database.engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    await database.dispose()


@pytest.fixture(scope="session")
def schema_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """One database per backend with the declared schema, made once per
    session; each test's database is a copy of it."""
    folder = tmp_path_factory.mktemp("templates")
    with pg_database() as pg, sqlite_database(folder) as lite:
        asyncio.run(_create_schema(pg))
        asyncio.run(_create_schema(lite))
        name = pg.rsplit("/", 1)[-1]
        try:
            yield {"postgresql": name, "sqlite": lite.removeprefix("sqlite:///")}
        finally:
            drop_pool(name)


@pytest.fixture
def empty_db_url(backend: str, tmp_path: Path) -> Iterator[str]:
    """A fresh, empty database (no tables: for the migration tests)."""
    with database_url(backend, tmp_path) as url:
        yield url


@pytest.fixture
def db_url(backend: str, tmp_path: Path, schema_templates: dict[str, str]) -> Iterator[str]:
    """A fresh database of ``backend`` with the declared schema."""
    with database_url(backend, tmp_path, schema_templates[backend]) as url:
        yield url


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    database = Database(db_url)
    try:
        yield database
    finally:
        await database.dispose()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()
