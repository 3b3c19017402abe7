"""Planner settings for the current transaction only (PostgreSQL's
``set_config(name, value, true)``, i.e. ``SET LOCAL``): a read model asks for
them without knowing the dialect; SQLite has no such settings, so there it
is a no-op (issue 16: no dialect branch outside ``db/``)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.dialects import POSTGRESQL, dialect_name


async def set_local(conn: AsyncConnection, **settings: str) -> None:
    """Set each PostgreSQL run-time parameter of ``settings`` (e.g.
    ``work_mem="64MB"``, ``jit="off"``) until the transaction ends, in one
    statement; nothing on SQLite."""
    if not settings or dialect_name(conn) != POSTGRESQL:
        return
    calls = ", ".join(f"set_config(:n{i}, :v{i}, true)" for i in range(len(settings)))
    params: dict[str, str] = {}
    for i, (name, value) in enumerate(settings.items()):
        params[f"n{i}"], params[f"v{i}"] = name, value
    await conn.execute(text(f"SELECT {calls}"), params)
