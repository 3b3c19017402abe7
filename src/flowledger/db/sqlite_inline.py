"""The async SQLite engine's driver connection (issue 15 item 4): aiosqlite,
except that a writing transaction runs on the event loop's thread.

aiosqlite runs every call — cursor, execute, fetch, close, commit — on the
connection's own thread: four thread hops per statement, each a queue put,
a wake-up of that thread and a callback back into the loop. A writing
transaction begins ``BEGIN IMMEDIATE`` (:mod:`flowledger.db.database`), and
once that statement has the file's write lock nothing the transaction runs
can wait for another connection (WAL: readers never block a writer, and a
commit's automatic checkpoint is passive), so its statements and its
commit run right on the loop's thread, as the ledger's hot path does
(:mod:`flowledger.db.sqlite_hotpath`). ``BEGIN IMMEDIATE`` itself is tried
there with a busy timeout of zero; when another connection holds the write
lock it runs on the connection's thread with the usual busy timeout, so the
loop never waits for another writer. Everything else (readers' deferred
transactions, connect, close) stays on the connection's thread: a long
read never blocks the loop.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

import aiosqlite

BEGIN_IMMEDIATE = "BEGIN IMMEDIATE"


def _locked(exc: sqlite3.OperationalError) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


class InlineWriterConnection(aiosqlite.Connection):
    """An aiosqlite connection whose writing transactions run inline."""

    def __init__(self, connector: Callable[[], sqlite3.Connection], busy_timeout_ms: int) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._thread.daemon = True  # as SQLAlchemy's aiosqlite adapter sets it
        self._busy_timeout_ms = busy_timeout_ms
        self._writing = False  # between a BEGIN IMMEDIATE and its commit/rollback

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if self._writing:
            if self._connection is not None and self._connection.in_transaction:
                return fn(*args, **kwargs)
            self._writing = False  # the transaction ended without commit() or rollback()
        if args and args[0] == BEGIN_IMMEDIATE and self._connection is not None:
            conn = self._connection
            conn.execute("PRAGMA busy_timeout=0")
            try:
                result = fn(*args, **kwargs)
            except sqlite3.OperationalError as exc:
                if not _locked(exc):
                    raise
                # another connection holds the write lock: wait for it on
                # the connection's thread, not on the loop
            else:
                self._writing = True
                return result
            finally:
                conn.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
            result = await super()._execute(fn, *args, **kwargs)  # type: ignore[no-untyped-call]
            self._writing = True
            return result
        return await super()._execute(fn, *args, **kwargs)  # type: ignore[no-untyped-call]

    async def commit(self) -> None:
        if self._connection is not None and not self._connection.in_transaction:
            self._writing = False
            return  # nothing to commit (no hop)
        try:
            await self._execute(self._conn.commit)
        finally:
            self._writing = False

    async def rollback(self) -> None:
        if self._connection is not None and not self._connection.in_transaction:
            self._writing = False
            return  # nothing to roll back: the pool's reset at check-in (no hop)
        try:
            await self._execute(self._conn.rollback)
        finally:
            self._writing = False
