"""Liveness of pooled PostgreSQL connections (db/idle_ping.py, issue 15 item 2;
SPEC L-9: a dropped connection must not lose work). PostgreSQL only: the
SQLite engine has no server to lose. A connection in steady use is not
pinged; one the server dropped while it idled is replaced before use, so the
caller never sees the error."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest
from sqlalchemy import text

from flowledger.db import idle_ping
from flowledger.db.database import Database
from tests.dbutil import pg_database


@pytest.fixture
async def pg() -> AsyncIterator[Database]:
    with pg_database() as url:
        db = Database(url, pool_size=1)
        try:
            yield db
        finally:
            await db.dispose()


def _count_pings(db: Database) -> list[int]:
    pings = [0]
    dialect = db.engine.sync_engine.dialect
    ping = dialect.do_ping

    def counted(dbapi_connection: object) -> bool:
        pings[0] += 1
        return ping(dbapi_connection)

    dialect.do_ping = counted  # type: ignore[method-assign]
    return pings


async def _backend_pid(db: Database) -> int:
    async with db.read() as conn:
        return int((await conn.execute(text("SELECT pg_backend_pid()"))).scalar_one())


async def test_a_connection_in_steady_use_is_not_pinged(pg: Database) -> None:
    await _backend_pid(pg)  # open the pool's one connection
    pings = _count_pings(pg)
    for _ in range(20):
        await _backend_pid(pg)
    assert pings[0] == 0


async def test_a_connection_dropped_while_idle_is_replaced_before_use(pg: Database) -> None:
    first = await _backend_pid(pg)
    pings = _count_pings(pg)
    other = Database(pg.url, pool_size=1)
    try:
        async with other.begin() as conn:
            await conn.execute(text("SELECT pg_terminate_backend(:pid)"), {"pid": first})
    finally:
        await other.dispose()
    await asyncio.sleep(idle_ping.IDLE_PING_S + 0.1)
    second = await _backend_pid(pg)  # no error reaches the caller
    assert second != first
    assert pings[0] == 1
