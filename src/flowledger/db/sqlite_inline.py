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
lock it is retried on the connection's thread every 0.5 ms (5 ms after the
first 0.25 s) for as long as the usual busy timeout, so the loop never waits for another writer.
Everything else (readers' deferred transactions, connect, close) stays on
the connection's thread: a long read never blocks the loop.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from typing import Any, TypeVar

import aiosqlite

T = TypeVar("T")

BEGIN_IMMEDIATE = "BEGIN IMMEDIATE"
# While another connection holds the write lock, BEGIN IMMEDIATE is retried
# this often (on the connection's thread). SQLite's own busy handler sleeps
# 1, 2, 5, 10 … 100 ms between tries and so misses the short gaps between
# another process's back-to-back transactions: a writer waited ~65-200 ms.
LOCKED_POLL_S = 0.0005
LOCKED_POLL_SLOW_S = 0.005  # after the first LOCKED_POLL_FAST_FOR_S of a wait
LOCKED_POLL_FAST_FOR_S = 0.25


def locked_poll_s(waited_s: float) -> float:
    """How long to sleep before the next try after waiting ``waited_s``."""
    return LOCKED_POLL_S if waited_s < LOCKED_POLL_FAST_FOR_S else LOCKED_POLL_SLOW_S


def _locked(exc: sqlite3.OperationalError) -> bool:
    return "locked" in str(exc) or "busy" in str(exc)


def begin_when_free(
    conn: sqlite3.Connection, begin: Callable[[], T], timeout_ms: int, restore_ms: int
) -> T:
    """Run ``begin`` (a ``BEGIN IMMEDIATE``) on ``conn``, whose busy timeout is
    zero, until the write lock is free or ``timeout_ms`` have passed
    ("database is locked", as the busy timeout would); then set the
    connection's busy timeout back to ``restore_ms``. For a thread that may
    wait; the caller has tried once already."""
    started = time.monotonic()
    try:
        while True:
            waited = time.monotonic() - started
            time.sleep(locked_poll_s(waited))
            try:
                return begin()
            except sqlite3.OperationalError as exc:
                if not _locked(exc) or waited >= timeout_ms / 1000:
                    raise
    finally:
        conn.execute(f"PRAGMA busy_timeout={restore_ms}")


class InlineWriterConnection(aiosqlite.Connection):
    """An aiosqlite connection whose writing transactions run inline.

    A call runs inline only while nothing queued on the connection's thread
    is still running (``_queued == _done``: a waiting ``BEGIN IMMEDIATE``
    whose caller was cancelled goes on there, and what follows must run
    after it, in order)."""

    def __init__(self, connector: Callable[[], sqlite3.Connection], busy_timeout_ms: int) -> None:
        super().__init__(connector, iter_chunk_size=64)
        self._thread.daemon = True  # as SQLAlchemy's aiosqlite adapter sets it
        self._busy_timeout_ms = busy_timeout_ms
        self._writing = False  # between a BEGIN IMMEDIATE and its commit/rollback
        self._queued = 0  # calls sent to the thread (counted on the loop's thread)
        self._done = 0  # calls the thread finished (counted on the thread)

    def _idle(self) -> sqlite3.Connection | None:
        """The sqlite3 connection, when it is open and its thread has no work."""
        return self._connection if self._queued == self._done else None

    async def _on_thread(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._running or not self._connection:
            return await super()._execute(fn, *args, **kwargs)  # type: ignore[no-untyped-call]

        def run() -> Any:
            try:
                return fn(*args, **kwargs)
            finally:
                self._done += 1

        self._queued += 1
        return await super()._execute(run)  # type: ignore[no-untyped-call]

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        conn = self._idle()
        if conn is None:
            return await self._on_thread(fn, *args, **kwargs)
        if self._writing:
            if conn.in_transaction:
                return fn(*args, **kwargs)
            self._writing = False  # the transaction ended without commit() or rollback()
        if args and args[0] == BEGIN_IMMEDIATE:
            conn.execute("PRAGMA busy_timeout=0")
            try:
                result = fn(*args, **kwargs)
            except sqlite3.OperationalError as exc:
                if not _locked(exc):
                    conn.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
                    raise
                # another connection holds the write lock: wait for it on
                # the connection's thread, not on the loop
                result = await self._on_thread(
                    begin_when_free,
                    conn,
                    lambda: fn(*args, **kwargs),
                    self._busy_timeout_ms,
                    self._busy_timeout_ms,
                )
            else:
                conn.execute(f"PRAGMA busy_timeout={self._busy_timeout_ms}")
            self._writing = True
            return result
        return await self._on_thread(fn, *args, **kwargs)

    async def commit(self) -> None:
        conn = self._idle()
        if conn is not None and not conn.in_transaction:
            self._writing = False
            return  # nothing to commit (no hop)
        try:
            await self._execute(self._conn.commit)
        finally:
            self._writing = False

    async def rollback(self) -> None:
        conn = self._idle()
        if conn is not None and not conn.in_transaction:
            self._writing = False
            return  # nothing to roll back: the pool's reset at check-in (no hop)
        try:
            await self._execute(self._conn.rollback)
        finally:
            self._writing = False
