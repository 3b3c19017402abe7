"""A database's change feed (issue 33 item 2): the one place writers publish
:class:`~flowledger.db.changes.Change` s after their commit and the API's
event streams subscribe to them (``Database.changes``).

Publishing is synchronous and costs nothing per job: changes gather for
:data:`COALESCE_S` (250 ms: a console refreshes a quarter of a second after
the change at most later than it would at once, and a busy worker sends at
most four notifies a second — at 50 ms they were a fifth of a statement per
instance of the engine bench) and then leave together — on PostgreSQL as one
``pg_notify`` round trip per window on an autocommit connection (whatever the
number of jobs settled meanwhile), received by every process's listener
(this one's too); on SQLite straight to this process's subscribers, so a
worker in another process on the same file is not heard (the console's
polling shows its work; :attr:`ChangeFeed.scope` says which case holds).

The PostgreSQL listener runs only while someone subscribes: the first
subscriber starts it, the last one stops it. :meth:`ChangeFeed.close` ends
every subscription (a server shutting down with open event streams).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Iterable
from typing import Literal

import structlog
from sqlalchemy import text
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine

from flowledger.db.changes import (
    CHANGES_CHANNEL,
    MAX_INSTANCE_IDS,
    Change,
    encode,
    listen_changes,
)

log = structlog.get_logger("flowledger.changes")

COALESCE_S = 0.25  # at most 4 notifies a second per process (issue 28: statements per instance)
SUBSCRIBER_BACKLOG = 1_000
LISTEN_WAIT_S = 2.0  # how long a new subscriber waits for the listener's LISTEN
_NOTIFY = text("SELECT pg_notify(:channel, :payload)")


class Subscription:
    """The changes one subscriber has not read yet; ``closed`` once the feed closes."""

    def __init__(self) -> None:
        self.queue: asyncio.Queue[Change] = asyncio.Queue(SUBSCRIBER_BACKLOG)
        self.closed = asyncio.Event()

    def put(self, change: Change) -> None:
        with contextlib.suppress(asyncio.QueueFull):  # far behind: it reloads anyway
            self.queue.put_nowait(change)


class ChangeFeed:
    """Publish and subscribe to the changes of one database."""

    def __init__(self, url: URL, engine: AsyncEngine, *, is_sqlite: bool) -> None:
        self._url, self._engine, self._local = url, engine, is_sqlite
        self._pending: dict[tuple[str, str | None], set[int] | None] = {}
        self._flush: asyncio.Task[None] | None = None
        self._subscribers: set[Subscription] = set()
        self._listener: asyncio.Task[None] | None = None
        self._listener_stop: asyncio.Event | None = None
        self._listening = asyncio.Event()
        self._ending: set[asyncio.Task[None]] = set()
        self._closed = False

    @property
    def scope(self) -> Literal["database", "process"]:
        """Whose changes a subscriber hears: every process's (PostgreSQL) or
        only this process's (SQLite)."""
        return "process" if self._local else "database"

    # ------------------------------------------------------------ publishing

    def publish(self, changes: Iterable[Change]) -> None:
        """Send ``changes`` within :data:`COALESCE_S` (needs a running loop)."""
        for change in changes:
            key = (change.topic, change.tenant)
            if key in self._pending and self._pending[key] is None:
                continue  # already "some instances"
            ids = self._pending.get(key) or set()
            ids.update(change.instance_ids)
            listed = change.topic != "instances" or change.instance_ids
            self._pending[key] = ids if listed and len(ids) <= MAX_INSTANCE_IDS else None
        loop = asyncio.get_running_loop()
        flush = self._flush
        # a window is open unless none is, or it ended, or it was left in a
        # loop that is gone (a Database used by several asyncio.run calls)
        if self._pending and (flush is None or flush.done() or flush.get_loop() is not loop):
            self._flush = loop.create_task(self._send_later())

    def job_settled(self, tenant: str | None, instance_id: int | None, failed: bool) -> None:
        """Publish what one job's settlement changed: the job lists of its
        tenant, its instance, and the health page when the attempt failed or
        an instance moved on (the worker calls it once per settled job)."""
        changes = [Change("jobs", tenant)]
        if instance_id is not None:
            changes.append(Change("instances", tenant, (instance_id,)))
        if failed or instance_id is not None:
            changes.append(Change("health", tenant))
        self.publish(changes)

    async def _send_later(self) -> None:
        # until nothing is left: changes published while a window was being
        # sent are the next window's
        while self._pending:
            await asyncio.sleep(COALESCE_S)
            pending, self._pending = self._pending, {}
            changes = [
                Change(topic, tenant, tuple(sorted(ids or ())))
                for (topic, tenant), ids in pending.items()
            ]
            if self._local:
                self.deliver(changes)
            else:
                await self._notify(changes)

    async def _notify(self, changes: list[Change]) -> None:
        try:
            async with self._engine.connect() as conn:
                conn = await conn.execution_options(isolation_level="AUTOCOMMIT")
                for payload in encode(changes):
                    await conn.execute(_NOTIFY, {"channel": CHANGES_CHANNEL, "payload": payload})
        except Exception as exc:  # a lost change costs latency only: polling shows it
            log.warning("change_notify_failed", error=str(exc))

    # ----------------------------------------------------------- subscribing

    def deliver(self, changes: list[Change]) -> None:
        """Hand ``changes`` to every subscriber of this process."""
        for subscription in list(self._subscribers):
            for change in changes:
                subscription.put(change)

    @contextlib.asynccontextmanager
    async def subscribe(self) -> AsyncIterator[Subscription]:
        """A subscription for the duration of the ``async with``."""
        subscription = Subscription()
        if self._closed:
            subscription.closed.set()
        self._subscribers.add(subscription)
        if not self._local and self._listener is None:
            self._listener_stop, self._listening = asyncio.Event(), asyncio.Event()
            self._listener = asyncio.get_running_loop().create_task(
                listen_changes(self._url, self.deliver, self._listener_stop, self._listening)
            )
        if not self._local:  # what is sent from now on is heard (unless the server is away)
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(LISTEN_WAIT_S):
                    await self._listening.wait()
        try:
            yield subscription
        finally:
            self._subscribers.discard(subscription)
            if not self._subscribers:
                self._stop_listener()

    def _stop_listener(self) -> None:
        """Let the listener end on its own (within its 0.5 s poll); a
        cancelled stream's cleanup must not await."""
        listener, stop = self._listener, self._listener_stop
        self._listener = self._listener_stop = None
        if listener is not None and stop is not None:
            stop.set()
            self._ending.add(listener)
            listener.add_done_callback(self._ending.discard)

    def close(self) -> None:
        """End every subscription, now and to come (the server is stopping)."""
        self._closed = True
        for subscription in list(self._subscribers):
            subscription.closed.set()
