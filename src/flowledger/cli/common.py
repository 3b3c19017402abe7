"""Shared pieces of the CLI: opening the configured database, the console,
and turning a flowledger error into a clear message and exit code 2."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from rich.console import Console

from flowledger.db.database import Database
from flowledger.db.migrate import upgrade
from flowledger.engine import Engine
from flowledger.runtime import Runtime, build_runtime
from flowledger.runtime import open_database as runtime_database
from flowledger.settings import get_settings

console = Console(stderr=True)
out = Console()


def open_database() -> Database:
    return runtime_database(get_settings())


@asynccontextmanager
async def runtime_session(
    *, migrate: bool = True, handler_modules: list[str] | None = None
) -> AsyncIterator[Runtime]:
    """The default runtime on the configured database (migrated first),
    closed and its database disposed after."""
    runtime = build_runtime(handler_modules=handler_modules)
    try:
        if migrate:
            await upgrade(runtime.db)
        yield runtime
    finally:
        await runtime.aclose()
        await runtime.db.dispose()


@asynccontextmanager
async def engine_session(*, migrate: bool = True) -> AsyncIterator[Engine]:
    """The runtime's engine on the configured database (migrated first)."""
    async with runtime_session(migrate=migrate) as runtime:
        yield runtime.engine
