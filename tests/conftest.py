"""Shared fixtures. ``db`` runs a test once per backend (SQLite and
PostgreSQL), each on a fresh database with the declared schema; ``clock`` is a
ManualClock so tests move time instead of sleeping."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from cryptography.fernet import Fernet

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import metadata
from tests.dbutil import database_url

BACKENDS = ["sqlite", "postgresql"]

# One secret key for the whole run, so that no test writes ./flowledger.key
# (tests that exercise the key file set their own settings).
os.environ.setdefault("FLOWLEDGER_SECRET_KEY", Fernet.generate_key().decode())


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, tmp_path: Path) -> Iterator[str]:
    with database_url(backend, tmp_path) as url:
        yield url


@pytest.fixture
async def db(db_url: str) -> AsyncIterator[Database]:
    database = Database(db_url)
    async with database.engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    try:
        yield database
    finally:
        await database.dispose()


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock()
