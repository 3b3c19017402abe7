"""The pooler settings of a database (issue 34 item 5): the wake listener's
own listen URL and server-side prepared statements turned off, as
``open_database`` takes them from the settings, on both backends.
End to end behind a real PgBouncer: tests/e2e/test_pgbouncer.py."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from flowledger.db.database import Database
from flowledger.db.pg_hotpath import PgHotPath
from flowledger.errors import ConfigurationError
from flowledger.runtime import open_database
from flowledger.settings import Settings


async def _prepare_thresholds(db: Database) -> tuple[Any, Any]:
    async with db.read() as conn:
        await conn.execute(text("SELECT 1"))
        raw = await conn.get_raw_connection()
        pooled = raw.driver_connection.prepare_threshold  # type: ignore[union-attr]
    hot = db.hot_path()
    assert isinstance(hot, PgHotPath)
    try:
        await hot.run("SELECT 1 AS one", {})
        assert hot._conn is not None
        return pooled, hot._conn.prepare_threshold
    finally:
        await hot.close()


async def test_settings_reach_the_database(db_url: str) -> None:
    direct = "postgresql://postgres@127.0.0.1:5432/elsewhere"
    if db_url.startswith("sqlite"):
        # a listen URL means nothing to SQLite: refused, naming the setting
        with pytest.raises(ConfigurationError) as refused:
            open_database(Settings(database_url=db_url, listen_database_url=direct))
        assert refused.value.field == "FLOWLEDGER_LISTEN_DATABASE_URL"
        db = open_database(Settings(database_url=db_url, db_prepared_statements=False))
        try:
            async with db.read() as conn:
                assert (await conn.execute(text("SELECT 1"))).scalar_one() == 1
        finally:
            await db.dispose()
        return
    db = open_database(
        Settings(database_url=db_url, listen_database_url=direct, db_prepared_statements=False)
    )
    try:
        assert make_url(db.listen_conninfo).database == "elsewhere"
        assert await _prepare_thresholds(db) == (None, None)
    finally:
        await db.dispose()
    db = open_database(Settings(database_url=db_url))
    try:  # the defaults: LISTEN on the database itself, statements prepared
        assert make_url(db.listen_conninfo).database == make_url(db_url).database
        assert await _prepare_thresholds(db) == (5, 0)
    finally:
        await db.dispose()


def test_a_bad_listen_url_names_its_setting() -> None:
    with pytest.raises(ConfigurationError) as refused:
        Database("postgresql://postgres@127.0.0.1/x", listen_url="mysql://h/db")
    assert refused.value.field == "FLOWLEDGER_LISTEN_DATABASE_URL"
