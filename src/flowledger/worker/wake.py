"""The worker's wake listener (SPEC L-8): runs the receiver the ``db`` layer
picks for the database (:func:`flowledger.db.wake_listen.wake_listener`:
LISTEN on PostgreSQL, a ``PRAGMA data_version`` watch on SQLite), which
signals the process's wake hub until ``stop`` is set."""

from __future__ import annotations

import asyncio

from flowledger.db.database import Database
from flowledger.db.wake_listen import wake_listener


async def listen(db: Database, stop: asyncio.Event) -> None:
    await wake_listener(db)(db, stop)
