"""Every statement a test's ``Database`` sends, for tests that count or read
them: SQLAlchemy's cursor events and, on PostgreSQL, the statements
``db/pg_direct.py`` sends past SQLAlchemy's execution layer (which those
events do not see)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

from flowledger.db import pg_direct
from flowledger.db.database import Database


def listen(db: Database, record: Callable[[str], None]) -> Callable[[], None]:
    """Call ``record(sql)`` for each statement ``db`` runs; returns the remover."""
    engine = db.engine.sync_engine

    def on_cursor(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        record(statement)

    def on_direct(conn: Any, statement: str) -> None:
        if conn.sync_engine is engine:
            record(statement)

    event.listen(engine, "before_cursor_execute", on_cursor)
    pg_direct.OBSERVERS.append(on_direct)

    def remove() -> None:
        event.remove(engine, "before_cursor_execute", on_cursor)
        pg_direct.OBSERVERS.remove(on_direct)

    return remove


@contextmanager
def watched(db: Database) -> Iterator[list[str]]:
    """The SQL text of every statement ``db`` runs inside the block."""
    seen: list[str] = []
    remove = listen(db, seen.append)
    try:
        yield seen
    finally:
        remove()
