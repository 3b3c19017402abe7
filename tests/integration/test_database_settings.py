"""The PostgreSQL production settings of a database, on both backends (issue
34): the wake listener's own listen URL and server-side prepared statements
turned off (item 5), as ``open_database`` takes them from the settings; the
read replica (item 6) as the runtime opens it and the API reads it, and
refused on SQLite naming the setting. End to end on real servers:
tests/e2e/test_pgbouncer.py, tests/e2e/test_read_replica.py."""

from __future__ import annotations

import os
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from flowledger.api.app import create_app
from flowledger.db.database import Database
from flowledger.db.pg_hotpath import PgHotPath
from flowledger.db.replica import replica_lag_ms
from flowledger.errors import ConfigurationError
from flowledger.runtime import build_runtime, open_database, open_replica
from flowledger.settings import Settings


async def _prepare_thresholds(db: Database) -> tuple[Any, Any, str]:
    """The pooled and the hot-path connections' prepare thresholds, and the
    hot path's plan cache mode (generic plans only where it prepares)."""
    async with db.read() as conn:
        await conn.execute(text("SELECT 1"))
        raw = await conn.get_raw_connection()
        pooled = raw.driver_connection.prepare_threshold  # type: ignore[union-attr]
    hot = db.hot_path()
    assert isinstance(hot, PgHotPath)
    try:
        mode = (await hot.run("SHOW plan_cache_mode", {}))[0]["plan_cache_mode"]
        assert hot._conn is not None
        return pooled, hot._conn.prepare_threshold, mode
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
        # behind a pooler nothing is prepared, so no session setting is made
        assert await _prepare_thresholds(db) == (None, None, "auto")
    finally:
        await db.dispose()
    db = open_database(Settings(database_url=db_url))
    try:  # the defaults: LISTEN on the database itself, statements prepared
        assert make_url(db.listen_conninfo).database == make_url(db_url).database
        assert await _prepare_thresholds(db) == (5, 0, "force_generic_plan")
    finally:
        await db.dispose()


def test_a_bad_listen_url_names_its_setting() -> None:
    with pytest.raises(ConfigurationError) as refused:
        Database("postgresql://postgres@127.0.0.1/x", listen_url="mysql://h/db")
    assert refused.value.field == "FLOWLEDGER_LISTEN_DATABASE_URL"


async def test_the_replica_setting(db_url: str) -> None:
    key = os.environ["FLOWLEDGER_SECRET_KEY"]
    plain = build_runtime(settings=Settings(database_url=db_url, secret_key=key))
    try:  # no replica: the console reads the primary
        assert plain.replica is None
        assert create_app(plain).state.api.read_db is plain.db
    finally:
        await plain.aclose()
        await plain.db.dispose()
    with_replica = Settings(database_url=db_url, read_database_url=db_url, secret_key=key)
    if db_url.startswith("sqlite"):
        with pytest.raises(ConfigurationError) as refused:
            build_runtime(settings=with_replica)
        assert refused.value.field == "FLOWLEDGER_READ_DATABASE_URL"
        return
    runtime = build_runtime(settings=with_replica)
    try:
        assert runtime.replica is not None and runtime.replica is not runtime.db
        assert create_app(runtime).state.api.read_db is runtime.replica
        # a server that is not in recovery has no replay lag to report
        assert await replica_lag_ms(runtime.replica) is None
    finally:
        await runtime.aclose()
        await runtime.db.dispose()
    gone = Database("postgresql://postgres@127.0.0.1:1/nowhere")
    try:  # a replica that cannot be reached: no lag to report, no error
        assert await replica_lag_ms(gone) is None
    finally:
        await gone.dispose()
    sqlite_replica = Settings(database_url=db_url, read_database_url="sqlite:///x.db")
    primary = open_database(sqlite_replica)
    try:
        with pytest.raises(ConfigurationError) as refused:
            open_replica(sqlite_replica, primary)
        assert refused.value.field == "FLOWLEDGER_READ_DATABASE_URL"
    finally:
        await primary.dispose()
