"""A dedicated SQLite connection pair for the ledger's fast path (issue 15
item 4): sync SQLAlchemy connections over the same file, set up as the async
engine's (WAL, ``BEGIN IMMEDIATE``). A call runs a whole writing transaction
while the event loop holds the database's in-process write lock, so it
queues with the process's other writers exactly as :meth:`Database.begin`
does. With that lock held only another process can be writing, so the
transaction first runs right on the event loop's thread with a busy timeout
of zero (a claim or a settlement is well under a millisecond of SQLite
work, and no thread hop; the loop also pays for an occasional WAL
checkpoint at commit); when another process holds the file's write lock
it runs instead on the hot path's own thread, retried every 0.5 ms (then 5 ms) for as
long as the usual busy timeout, so the loop never waits for another
process. What it runs is
:mod:`flowledger.ledger.driver.sqlite_sql`. A worker opens one per pool and one for
its settler.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import TypeVar

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import OperationalError

from flowledger.db.sqlite_inline import locked_poll_s

T = TypeVar("T")
BUSY_TIMEOUT_MS = 30_000  # the thread's: as long as every other writer waits


def _busy(exc: OperationalError) -> bool:
    return isinstance(exc.orig, sqlite3.OperationalError) and "locked" in str(exc.orig)


class SqliteHotPath:
    """Two sync connections (the loop's, never waiting; the thread's); each
    :meth:`run` is one transaction on one of them."""

    def __init__(
        self, make_engine: Callable[[int], Engine], write_lock: asyncio.Lock | None
    ) -> None:
        """``make_engine(busy_timeout_ms)`` opens a sync engine over the file."""
        self._make_engine = make_engine
        self._write_lock = write_lock
        self._inline: Engine | None = None
        self._threaded: Engine | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flowledger-sqlite")

    def _run_inline(self, work: Callable[[Connection], T]) -> T:
        if self._inline is None:
            self._inline = self._make_engine(0)
        with self._inline.begin() as conn:
            return work(conn)

    def _run_threaded(self, work: Callable[[Connection], T]) -> T:
        """Retry every :func:`~flowledger.db.sqlite_inline.locked_poll_s`
        while another process holds the write lock, for as long as the
        busy timeout would wait (SQLite's own busy handler backs off to
        100 ms between tries and misses the gaps between that process's
        transactions). Only ``BEGIN IMMEDIATE`` can find the lock taken; a
        try that did is rolled back whole, so ``work`` runs again from the
        start."""
        if self._threaded is None:
            self._threaded = self._make_engine(0)
        started = time.monotonic()
        while True:
            waited = time.monotonic() - started
            time.sleep(locked_poll_s(waited))
            try:
                with self._threaded.begin() as conn:
                    return work(conn)
            except OperationalError as exc:
                if not _busy(exc) or waited >= BUSY_TIMEOUT_MS / 1000:
                    raise

    async def run(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in one writing transaction; committed when it
        returns, rolled back when it raises."""
        lock = self._write_lock if self._write_lock is not None else nullcontext()
        async with lock:
            try:
                return self._run_inline(work)
            except OperationalError as exc:
                if not _busy(exc):
                    raise
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._thread, self._run_threaded, work)

    def _dispose_threaded(self) -> None:
        if self._threaded is not None:
            self._threaded.dispose()
            self._threaded = None

    async def close(self) -> None:
        if self._inline is not None:
            self._inline.dispose()
            self._inline = None
        await asyncio.get_running_loop().run_in_executor(self._thread, self._dispose_threaded)
        self._thread.shutdown(wait=False)
