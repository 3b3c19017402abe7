"""A dedicated SQLite connection for the ledger's fast path (issue 15 item
4): a sync SQLAlchemy connection over the same file, set up as the async
engine's (WAL, ``BEGIN IMMEDIATE``), driven by one thread of its own. A call
runs a whole writing transaction on that thread — one thread hop per
transaction, where the async driver makes several per statement — while the
event loop holds the database's in-process write lock, so it queues with the
process's other writers exactly as :meth:`Database.begin` does. What it runs
is the portable Core plans of claim and settlement
(:mod:`flowledger.ledger.driver.plans`), the same statements
:class:`~flowledger.ledger.driver.core.CoreLedger` sends over the async
engine. A worker opens one per pool and one for its settler.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import nullcontext
from typing import TypeVar

from sqlalchemy import Connection, Engine

T = TypeVar("T")


class SqliteHotPath:
    """One sync connection on one thread; each :meth:`run` is one transaction."""

    def __init__(self, make_engine: Callable[[], Engine], write_lock: asyncio.Lock | None) -> None:
        self._make_engine = make_engine
        self._write_lock = write_lock
        self._engine: Engine | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="flowledger-sqlite")

    def _transaction(self, work: Callable[[Connection], T]) -> T:
        if self._engine is None:
            self._engine = self._make_engine()
        with self._engine.begin() as conn:
            return work(conn)

    async def run(self, work: Callable[[Connection], T]) -> T:
        """Run ``work`` in one writing transaction on the hot path's thread;
        committed when it returns, rolled back when it raises."""
        lock = self._write_lock if self._write_lock is not None else nullcontext()
        async with lock:
            loop = asyncio.get_running_loop()
            return await loop.run_in_executor(self._thread, self._transaction, work)

    def _dispose(self) -> None:
        if self._engine is not None:
            self._engine.dispose()
            self._engine = None

    async def close(self) -> None:
        await asyncio.get_running_loop().run_in_executor(self._thread, self._dispose)
        self._thread.shutdown(wait=False)
