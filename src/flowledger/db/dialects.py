"""Which dialect a connection speaks, and the dialect's ``INSERT`` construct
(the one with ``ON CONFLICT``), so that callers above ``db/`` write an upsert
without branching on the dialect themselves."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Table
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection

SQLITE = "sqlite"
POSTGRESQL = "postgresql"


def dialect_name(conn: AsyncConnection) -> str:
    """``"sqlite"`` or ``"postgresql"``."""
    return POSTGRESQL if conn.dialect.name == POSTGRESQL else SQLITE


def upsert(conn: AsyncConnection, table: Table) -> Any:
    """``INSERT INTO table`` in the connection's dialect, offering
    ``on_conflict_do_nothing`` / ``on_conflict_do_update``."""
    insert = postgresql.insert if dialect_name(conn) == POSTGRESQL else sqlite.insert
    return insert(table)
