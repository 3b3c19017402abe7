"""Engine creation and transactions for both backends.

SQLite: WAL, a busy timeout, foreign keys on, ``BEGIN IMMEDIATE`` for every
writing transaction (readers use a deferred ``BEGIN``) and an in-process write
lock so writers of one process queue fairly instead of spinning in SQLite's
busy handler. ``synchronous=NORMAL`` (issue 15 item 4): in WAL mode a
commit is then synced at the next checkpoint, not at once — a process crash
loses nothing, an OS crash or power loss can lose the last commits but never
corrupts the file. Acceptable for the embedded default: the ledger's state
rolls back consistently (a lost claim is pending again, a lost settlement
runs its job again, and a step's receipt is in the same WAL as its business
write, SPEC L-14); the one exposure is an unsafe external call whose
side-effect marker (L-17) was among the lost commits, which may be sent
again — deployments that cannot accept that run PostgreSQL.
PostgreSQL: psycopg 3 async with a connection pool (a connection idle in
it is pinged before use: :mod:`flowledger.db.idle_ping`), plus an
autocommit view of the same pool for single-statement hot paths (claim and
batch settlement) that are atomic on their own.

Behind a transaction-mode pooler (PgBouncer, issue 34 item 5) every
connection opened here works statement by statement or transaction by
transaction: no session state is kept between transactions (``SET LOCAL`` /
``set_config(…, true)`` only, no advisory lock, temporary table or
``WITH HOLD`` cursor; ``pg_notify`` is delivered at commit). What a session
pooler would break is kept apart: server-side prepared statements are off
when ``prepared_statements`` is False (psycopg's ``prepare_threshold=None``,
for the pool and the hot-path connections alike), and the wake listener's
``LISTEN`` connects to ``listen_url`` (:attr:`Database.listen_conninfo`),
straight to the server.

A writing transaction can hold buffers (:func:`pre_commit`) that are flushed
just before it commits: the engine writes a step's trace and outbox rows
that way, once per table per transaction (issue 15 item 2), or the engine's
store writes them earlier in a statement of its own. No statement looks
into these buffers by itself.
"""

from __future__ import annotations

import asyncio
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager, nullcontext
from datetime import UTC, datetime
from functools import partial
from typing import Any, Protocol

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine, create_async_engine
from sqlalchemy.pool import StaticPool
from sqlalchemy.util.concurrency import in_greenlet

from flowledger.db import wake
from flowledger.db.change_feed import ChangeFeed
from flowledger.db.idle_ping import ping_when_idle
from flowledger.db.pg_direct import DirectEngine
from flowledger.db.pg_hotpath import PgHotPath
from flowledger.db.sqlite_hotpath import SqliteHotPath
from flowledger.db.sqlite_inline import BEGIN_IMMEDIATE, InlineWriterConnection
from flowledger.db.urls import async_url, is_sqlite, libpq_conninfo
from flowledger.errors import ConfigurationError

_READONLY = "flowledger_readonly"
_PRE_COMMIT = "flowledger_pre_commit"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def _sqlite_engine(url: URL, pool_size: int) -> AsyncEngine:
    """aiosqlite, with writing transactions on the loop's thread
    (:mod:`flowledger.db.sqlite_inline`)."""
    args, kwargs = url.get_dialect()().create_connect_args(url)
    kwargs.update(timeout=SQLITE_BUSY_TIMEOUT_MS / 1000, check_same_thread=False)

    async def connect() -> InlineWriterConnection:
        connection = InlineWriterConnection(
            partial(sqlite3.connect, *args, **kwargs), SQLITE_BUSY_TIMEOUT_MS
        )
        await connection  # opens it on its thread
        return connection

    engine = create_async_engine(
        url, pool_size=pool_size, max_overflow=pool_size, async_creator=connect
    )
    _sqlite_session(engine.sync_engine)
    return engine


def _sqlite_sync_engine(url: URL, busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS) -> Engine:
    """A sync engine over the same file, set up as the async one except for
    the busy timeout (the SQLite hot path: one that never waits, for the
    event loop's thread, and one that does, for its own thread)."""
    engine = create_engine(
        url.set(drivername="sqlite"),
        poolclass=StaticPool,
        connect_args={"timeout": busy_timeout_ms / 1000},
    )
    _sqlite_session(engine, busy_timeout_ms)
    return engine


def _sqlite_session(engine: Engine, busy_timeout_ms: int = SQLITE_BUSY_TIMEOUT_MS) -> None:
    """WAL, busy timeout, foreign keys, ``synchronous=NORMAL`` on every
    connection; ``BEGIN IMMEDIATE`` for every writing transaction."""

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we emit BEGIN ourselves
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={busy_timeout_ms}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(conn: Any) -> None:
        readonly = conn.get_execution_options().get(_READONLY, False)
        conn.exec_driver_sql("BEGIN" if readonly else BEGIN_IMMEDIATE)


def _postgres_engine(url: URL, pool_size: int, prepare_threshold: int | None) -> AsyncEngine:
    engine = DirectEngine(
        create_async_engine(
            url,
            pool_size=pool_size,
            max_overflow=pool_size,
            connect_args={"prepare_threshold": prepare_threshold},
        ).sync_engine
    )
    ping_when_idle(engine.sync_engine)  # not at every checkout: see db/idle_ping.py
    _close_without_greenlet(engine)
    return engine


def _close_without_greenlet(engine: AsyncEngine) -> None:
    """Closing a connection the server dropped (a PostgreSQL restart) can
    happen outside SQLAlchemy's greenlet (a pool finalizer); the psycopg
    adapter then awaits and raises ``MissingGreenlet``, logged with a
    traceback (issue 17 item 12). There, the socket is dropped directly
    (libpq ``PQfinish`` through psycopg's public ``pgconn``): nothing is left
    to say to a server that is gone."""
    dialect = engine.sync_engine.dialect
    close = dialect.do_close

    def do_close(dbapi_connection: Any) -> None:
        if in_greenlet():
            close(dbapi_connection)
            return
        raw = getattr(dbapi_connection, "_connection", None)
        pgconn = getattr(raw, "pgconn", None)
        if pgconn is not None:
            pgconn.finish()

    dialect.do_close = do_close  # type: ignore[method-assign]
    dialect.do_terminate = do_close  # type: ignore[method-assign]


class PreCommit(Protocol):
    """Work buffered in a transaction and written just before it commits."""

    async def flush(self) -> None: ...


def pre_commit(conn: AsyncConnection) -> dict[str, PreCommit] | None:
    """The buffers to flush before the transaction open on ``conn`` commits,
    by name; None when ``conn`` is not in a :meth:`Database.begin` transaction
    (the caller then writes at once)."""
    registry: dict[str, PreCommit] | None = conn.info.get(_PRE_COMMIT)
    return registry


class Database:
    """One database: its engine, its transactions, its in-process wake hub and
    its change feed for the live console (:mod:`flowledger.db.change_feed`)."""

    def __init__(
        self,
        raw_url: str,
        *,
        pool_size: int = 10,
        listen_url: str = "",
        prepared_statements: bool = True,
    ) -> None:
        """``listen_url``: where the wake listener's ``LISTEN`` session
        connects (PostgreSQL; empty: ``raw_url``). ``prepared_statements``:
        False turns psycopg's server-side prepared statements off (a
        transaction-mode pooler that cannot carry them)."""
        self.raw_url = raw_url
        self.url = async_url(raw_url)
        self.is_sqlite = is_sqlite(self.url)
        self.dialect = "sqlite" if self.is_sqlite else "postgresql"
        listen = (
            async_url(listen_url, field="FLOWLEDGER_LISTEN_DATABASE_URL") if listen_url else None
        )
        if listen is not None and (self.is_sqlite or is_sqlite(listen)):
            raise ConfigurationError(
                "a listen database URL is for PostgreSQL only",
                field="FLOWLEDGER_LISTEN_DATABASE_URL",
            )
        self.listen_url = listen or self.url
        # psycopg: None never prepares; the pool keeps its default (5 runs)
        # and the hot path prepares its fixed statements at once (0)
        self._prepare: tuple[int | None, int | None] = (
            (5, 0) if prepared_statements else (None, None)
        )
        if self.is_sqlite:
            self.engine = _sqlite_engine(self.url, pool_size)
        else:
            self.engine = _postgres_engine(self.url, pool_size, self._prepare[0])
        self._autocommit = self.engine.execution_options(isolation_level="AUTOCOMMIT")
        self._write_lock = asyncio.Lock() if self.is_sqlite else None
        self.hub = wake.WakeHub()
        # issue 33 item 2: its LISTEN goes where the wake listener's does
        self.changes = ChangeFeed(self.listen_url, self.engine, is_sqlite=self.is_sqlite)

    @asynccontextmanager
    async def begin(self) -> AsyncIterator[AsyncConnection]:
        """A writing transaction; wake hints are published after commit."""
        lock = self._write_lock if self._write_lock is not None else nullcontext()
        async with lock, self.engine.connect() as conn:
            wake.begin_tracking(conn)
            buffers: dict[str, PreCommit] = {}
            conn.info[_PRE_COMMIT] = buffers
            try:
                async with conn.begin():
                    yield conn
                    for buffer in list(buffers.values()):
                        await buffer.flush()
            finally:
                # a connection invalidated by a disconnect has lost its info
                # with its pool record, and reading it would reconnect here
                # (outside SQLAlchemy's greenlet): nothing to clear or publish
                if conn.invalidated:
                    pools = set()
                else:
                    conn.info.pop(_PRE_COMMIT, None)
                    pools = wake.take_pending(conn)
        # reached only when the transaction committed
        for pool in pools:
            self.hub.signal(pool)

    @asynccontextmanager
    async def read(self) -> AsyncIterator[AsyncConnection]:
        """A read-only transaction (deferred on SQLite, so it never blocks writers)."""
        async with self.engine.connect() as conn:
            await conn.execution_options(**{_READONLY: True})
            async with conn.begin():
                yield conn

    @asynccontextmanager
    async def single_statement(self) -> AsyncIterator[AsyncConnection]:
        """A connection for one self-contained statement: autocommit on
        PostgreSQL (one round trip), a writing transaction on SQLite."""
        if self.is_sqlite:
            async with self.begin() as conn:
                yield conn
        else:
            async with self._autocommit.connect() as conn:
                yield conn

    def hot_path(self) -> PgHotPath | SqliteHotPath | None:
        """A dedicated hot-path connection: psycopg on PostgreSQL; on SQLite
        sync connections that take this database's write lock (None for an
        in-memory SQLite database, which only its own engine can see)."""
        if not self.is_sqlite:
            return PgHotPath(libpq_conninfo(self.url), prepare_threshold=self._prepare[1])
        if self.url.database in (None, "", ":memory:"):
            return None
        return SqliteHotPath(lambda ms: _sqlite_sync_engine(self.url, ms), self._write_lock)

    @property
    def listen_conninfo(self) -> str:
        """The libpq connection string of the wake listener's session."""
        return libpq_conninfo(self.listen_url)

    async def now(self) -> datetime:
        """The database server's clock."""
        if self.is_sqlite:
            return datetime.now(UTC)
        async with self.engine.connect() as conn:
            value = (await conn.execute(text("SELECT clock_timestamp()"))).scalar_one()
        assert isinstance(value, datetime)
        return value.astimezone(UTC)

    async def dispose(self) -> None:
        await self.engine.dispose()
