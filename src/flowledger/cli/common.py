"""Shared pieces of the CLI: opening the configured database, the console,
and turning a flowledger error into a clear message and exit code 2."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from rich.console import Console

from flowledger.clock import SystemClock
from flowledger.db.database import Database
from flowledger.db.migrate import upgrade
from flowledger.engine import Engine
from flowledger.settings import get_settings

console = Console(stderr=True)
out = Console()


def open_database() -> Database:
    settings = get_settings()
    return Database(settings.database_url, pool_size=settings.db_pool_size)


@asynccontextmanager
async def engine_session(*, migrate: bool = True) -> AsyncIterator[Engine]:
    """An engine on the configured database (migrated first), disposed after."""
    db = open_database()
    try:
        if migrate:
            await upgrade(db)
        yield Engine(db, SystemClock())
    finally:
        await db.dispose()
