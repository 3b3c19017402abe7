"""Wake hints (SPEC L-8): a coalescible "there is work in pool P" signal that
is published only when the enqueueing transaction commits.

PostgreSQL: ``pg_notify`` issued inside the transaction; the server delivers it
on commit and drops it on rollback. SQLite: the pool is remembered on the
connection and signalled in-process by :meth:`Database.begin` after commit
(other processes notice commits through ``PRAGMA data_version``, see
:mod:`flowledger.db.wake_listen`). A lost hint costs latency only: polling still
claims.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

WAKE_CHANNEL = "flowledger_wake"
_PENDING_KEY = "flowledger_wake_pending"
_NOTIFY = text("SELECT pg_notify(:channel, :pool)")


class WakeHub:
    """In-process fan-out of wake hints to every pool waiting in this process."""

    def __init__(self) -> None:
        self._waiters: dict[str, set[asyncio.Event]] = defaultdict(set)

    def subscribe(self, pool: str) -> asyncio.Event:
        event = asyncio.Event()
        self._waiters[pool].add(event)
        return event

    def unsubscribe(self, pool: str, event: asyncio.Event) -> None:
        self._waiters[pool].discard(event)

    def signal(self, pool: str | None = None) -> None:
        """Wake the waiters of ``pool``, or of every pool when None."""
        pools = list(self._waiters) if pool is None else [pool]
        for name in pools:
            for event in self._waiters.get(name, ()):
                event.set()


def begin_tracking(conn: AsyncConnection) -> None:
    """Start collecting hints for the transaction just begun on ``conn``."""
    conn.info[_PENDING_KEY] = set()


def take_pending(conn: AsyncConnection) -> set[str]:
    """The pools hinted in the transaction that just ended on ``conn``."""
    pending: set[str] = conn.info.pop(_PENDING_KEY, set())
    return pending


def mark_hinted(conn: AsyncConnection, pool: str) -> None:
    """Record that the caller's own statement has just issued ``pg_notify``
    for ``pool`` in the current transaction (PostgreSQL's bulk insert does,
    :func:`flowledger.ledger.driver.postgres_sql.insert_jobs_sql`): in-process waiters are
    signalled after commit as for :func:`hint`, and a later hint of the
    same pool in this transaction is coalesced."""
    pending: set[str] | None = conn.info.get(_PENDING_KEY)
    if pending is not None:
        pending.add(pool)


async def hint(conn: AsyncConnection, pool: str) -> None:
    """Publish a wake hint for ``pool`` when the current transaction commits."""
    pending: set[str] | None = conn.info.get(_PENDING_KEY)
    if pending is not None and pool in pending:
        return  # coalesced: one hint per pool per transaction
    if pending is not None:
        pending.add(pool)
    if conn.dialect.name == "postgresql":
        await conn.execute(_NOTIFY, {"channel": WAKE_CHANNEL, "pool": pool})
