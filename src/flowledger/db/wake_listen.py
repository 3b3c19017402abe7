"""Receiving wake hints (SPEC L-8) for a process's wake hub
(:class:`~flowledger.db.wake.WakeHub`), and the one place that picks how by
the database's dialect (:func:`wake_listener`).

PostgreSQL: a dedicated connection that LISTENs on ``flowledger_wake`` and
signals the hub. It is a session of its own, opened on the database's
listen URL (``FLOWLEDGER_LISTEN_DATABASE_URL``: straight to the server when
the other connections go through a transaction-mode pooler, which would hand
the LISTEN's server connection to other clients and lose the hints). It
reconnects with backoff and wakes every pool after reconnecting (hints sent
while it was away are lost, polling and that first wake cover them).
SQLite: hints from this process reach the hub directly when their
transaction commits (:meth:`Database.begin`), with no poll in between;
commits by other processes are noticed by watching ``PRAGMA data_version``
every 50 ms.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable

import psycopg
import structlog

from flowledger.db.database import Database
from flowledger.db.wake import WAKE_CHANNEL

log = structlog.get_logger("flowledger.worker")

Listener = Callable[[Database, asyncio.Event], Awaitable[None]]


async def listen_postgres(db: Database, stop: asyncio.Event) -> None:
    conninfo = db.listen_conninfo
    delay = 0.1
    while not stop.is_set():
        try:
            async with await psycopg.AsyncConnection.connect(conninfo, autocommit=True) as conn:
                await conn.execute(f"LISTEN {WAKE_CHANNEL}")
                delay = 0.1
                db.hub.signal(None)
                while not stop.is_set():
                    async for notify in conn.notifies(timeout=0.5):
                        db.hub.signal(notify.payload)
        except (psycopg.Error, OSError) as exc:
            log.warning("wake_listener_reconnecting", error=str(exc))
            try:
                async with asyncio.timeout(delay):
                    await stop.wait()
            except TimeoutError:
                pass
            delay = min(delay * 2, 5.0)


async def watch_sqlite(db: Database, stop: asyncio.Event, *, interval_s: float = 0.05) -> None:
    """Signal every pool when another connection has committed to the file."""
    last: int | None = None
    while not stop.is_set():
        try:
            async with db.engine.connect() as conn:
                await conn.execution_options(flowledger_readonly=True)
                while not stop.is_set():
                    async with conn.begin():  # deferred: takes no lock
                        result = await conn.exec_driver_sql("PRAGMA data_version")
                        version = result.scalar_one()
                    if last is not None and version != last:
                        db.hub.signal(None)
                    last = version
                    try:
                        async with asyncio.timeout(interval_s):
                            await stop.wait()
                    except TimeoutError:
                        pass
        except Exception as exc:
            log.warning("sqlite_watch_failed", error=str(exc))
            await asyncio.sleep(1.0)


def wake_listener(db: Database) -> Listener:
    """How this process receives the hints of ``db``'s other processes."""
    return watch_sqlite if db.is_sqlite else listen_postgres
