"""The SQLite fast path's transport (issue 15 item 4): a transaction runs on
the event loop's thread while no other process writes, and, when another
process holds the file's write lock, waits for it on the hot path's own
thread — committed once the other writer is done, never failing with
"database is locked" and never blocking the event loop meanwhile."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time

import pytest
from sqlalchemy import Connection, text

from flowledger.db.database import Database
from flowledger.db.sqlite_hotpath import SqliteHotPath


def _write(conn: Connection) -> tuple[str, int]:
    conn.execute(text("CREATE TABLE IF NOT EXISTS hot_probe (n INTEGER)"))
    conn.execute(text("INSERT INTO hot_probe (n) VALUES (1)"))
    count = conn.execute(text("SELECT count(*) FROM hot_probe")).scalar_one()
    return threading.current_thread().name, int(count)


@pytest.mark.parametrize("backend", ["sqlite"])  # SQLite-only transport
async def test_hot_path_waits_off_the_loop_for_another_writer(db: Database) -> None:
    hot = db.hot_path()
    assert isinstance(hot, SqliteHotPath)
    try:
        thread, count = await hot.run(_write)
        assert (thread, count) == (threading.current_thread().name, 1)  # on the loop's thread
        other = sqlite3.connect(db.url.database or "", isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process's writer holds the file
        other.execute("INSERT INTO hot_probe (n) VALUES (2)")
        waiting = asyncio.ensure_future(hot.run(_write))
        started = time.monotonic()
        await asyncio.sleep(0.3)
        assert time.monotonic() - started < 0.6  # the loop kept running meanwhile
        assert not waiting.done()  # queued behind the other writer, not failed
        other.execute("COMMIT")
        other.close()
        thread, count = await waiting
        assert thread.startswith("flowledger-sqlite")  # it waited on the hot path's thread
        assert count == 3  # committed after the other writer's row
        thread, count = await hot.run(_write)
        assert (thread, count) == (threading.current_thread().name, 4)
    finally:
        await hot.close()
