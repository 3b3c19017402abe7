"""Writes held back on a connection until its next statement
(``db/pg_direct.defer_to_next_statement``; issue 15 item 2), on both
backends: on PostgreSQL they run, in the order they were held, just before
the next statement sent, unless taken back; ``Database.begin`` runs what is
still held before it commits and drops it when it rolls back. SQLite's
connections hold nothing: the caller is told to write at once."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from flowledger.db.database import Database
from flowledger.db.pg_direct import defer_to_next_statement, drop_deferred

_TABLE = "CREATE TABLE held_writes (n int)"


async def _rows(db: Database) -> list[int]:
    async with db.read() as conn:
        return [r[0] for r in await conn.execute(text("SELECT n FROM held_writes ORDER BY n"))]


async def test_held_writes_run_in_order_before_the_next_statement(db: Database) -> None:
    async with db.begin() as conn:
        await conn.execute(text(_TABLE))
    order: list[str] = []

    def writer(n: int):  # type: ignore[no-untyped-def]
        async def write() -> None:
            order.append(f"write {n}")
            await conn.execute(text(f"INSERT INTO held_writes VALUES ({n})"))

        return write

    async with db.begin() as conn:
        first, second, dropped = writer(1), writer(2), writer(3)
        held = [defer_to_next_statement(conn, w) for w in (first, second, dropped, first)]
        if db.is_sqlite:
            assert held == [False] * 4  # nothing held: the caller writes at once
            return
        assert held == [True] * 4
        drop_deferred(conn, dropped)  # carried elsewhere: never run here
        found = (await conn.execute(text("SELECT count(*) FROM held_writes"))).scalar_one()
        order.append("read")
        assert found == 2  # the read saw both held writes
    assert order == ["write 1", "write 2", "read"]  # each once, in the order held
    assert await _rows(db) == [1, 2]


async def test_a_held_write_runs_before_commit_or_is_dropped_with_a_rollback(
    db: Database,
) -> None:
    if db.is_sqlite:
        pytest.skip("SQLite's connections hold no writes")
    one = Database(db.raw_url, pool_size=1)  # every transaction on the same connection
    try:
        async with one.begin() as conn:
            await conn.execute(text(_TABLE))

        async def insert(n: int) -> None:
            await conn.execute(text(f"INSERT INTO held_writes VALUES ({n})"))

        async with one.begin() as conn:
            defer_to_next_statement(conn, lambda: insert(1))  # no statement follows
        assert await _rows(one) == [1]
        with pytest.raises(RuntimeError):
            async with one.begin() as conn:
                defer_to_next_statement(conn, lambda: insert(2))
                raise RuntimeError("rolled back")
        async with one.begin() as conn:  # the same connection: nothing held on it
            await conn.execute(text("SELECT 1"))
        assert await _rows(one) == [1]
    finally:
        await one.dispose()
