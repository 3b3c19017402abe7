"""The async SQLite engine's transport (issue 15 item 4): a writing
transaction runs its statements on the event loop's thread once
``BEGIN IMMEDIATE`` holds the write lock; a reader runs on the connection's
own thread; while another process holds the file's write lock,
``BEGIN IMMEDIATE`` waits for it on the connection's thread — the loop keeps
running, and the transaction commits after the other writer, never failing
with "database is locked"."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
import time
from typing import Any

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import MissingGreenlet

from flowledger.db.database import Database


def _probe_threads(db: Database) -> None:
    """``probe_thread()`` in SQL: the name of the thread running the statement."""

    @event.listens_for(db.engine.sync_engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.create_function("probe_thread", 0, lambda: threading.current_thread().name)


async def _write(db: Database) -> tuple[str, int]:
    async with db.begin() as conn:
        await conn.execute(text("INSERT INTO inline_probe (n) VALUES (1)"))
        thread = (await conn.execute(text("SELECT probe_thread()"))).scalar_one()
        count = (await conn.execute(text("SELECT count(*) FROM inline_probe"))).scalar_one()
    return str(thread), int(count)


async def _read_thread(db: Database) -> str:
    async with db.read() as conn:
        return str((await conn.execute(text("SELECT probe_thread()"))).scalar_one())


@pytest.mark.parametrize("backend", ["sqlite"])  # SQLite-only transport
async def test_writes_run_on_the_loop_and_wait_off_it_for_another_writer(db: Database) -> None:
    _probe_threads(db)
    loop_thread = threading.current_thread().name
    async with db.begin() as conn:
        await conn.execute(text("CREATE TABLE inline_probe (n INTEGER)"))
    assert await _write(db) == (loop_thread, 1)
    assert await _read_thread(db) != loop_thread  # a reader stays off the loop

    other = sqlite3.connect(db.url.database or "", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process's writer holds the file
        other.execute("INSERT INTO inline_probe (n) VALUES (2)")
        waiting = asyncio.ensure_future(_write(db))
        started = time.monotonic()
        await asyncio.sleep(0.3)
        assert time.monotonic() - started < 0.6  # the loop kept running meanwhile
        assert not waiting.done()  # queued behind the other writer, not failed
        other.execute("COMMIT")
    finally:
        other.close()
    assert await waiting == (loop_thread, 3)  # after the other writer's row

    with pytest.raises(RuntimeError):
        async with db.begin() as conn:
            await conn.execute(text("INSERT INTO inline_probe (n) VALUES (9)"))
            raise RuntimeError("roll back")
    assert await _read_thread(db) != loop_thread  # back off the loop after a rollback
    assert await _write(db) == (loop_thread, 4)  # the rolled-back row is gone


@pytest.mark.parametrize("backend", ["sqlite"])
async def test_a_cancelled_wait_for_the_write_lock_leaves_nothing_open(db: Database) -> None:
    """The cancelled caller's BEGIN IMMEDIATE goes on waiting on the
    connection's thread; what the connection runs next queues behind it (in
    order, not inline), so the transaction it may still open is rolled back
    and the write lock is free again."""
    _probe_threads(db)
    async with db.begin() as conn:
        await conn.execute(text("CREATE TABLE inline_probe (n INTEGER)"))
    other = sqlite3.connect(db.url.database or "", isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")
        waiting = asyncio.ensure_future(_write(db))
        await asyncio.sleep(0.2)
        waiting.cancel()
        await asyncio.sleep(0.1)  # its cleanup queues behind the waiting BEGIN
        other.execute("INSERT INTO inline_probe (n) VALUES (2)")
        other.execute("COMMIT")
    finally:
        other.close()
    # cancelled (SQLAlchemy then invalidates the connection; closing it in
    # Database.begin's cleanup may fail with its own error)
    with pytest.raises((asyncio.CancelledError, MissingGreenlet)):
        await waiting
    for _ in range(3):  # every pooled connection is usable, none holds the lock
        assert (await _write(db))[0] == threading.current_thread().name
    third = sqlite3.connect(db.url.database or "", isolation_level=None, timeout=5)
    try:
        third.execute("BEGIN IMMEDIATE")  # the write lock is free
        assert third.execute("SELECT count(*) FROM inline_probe").fetchone() == (4,)
        third.execute("ROLLBACK")
    finally:
        third.close()
