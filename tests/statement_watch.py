"""Every statement a test's ``Database`` sends, for tests that count or read
them: SQLAlchemy's cursor events and, on PostgreSQL, the statements
``db/pg_direct.py`` sends past SQLAlchemy's execution layer (which those
events do not see)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import event

from flowledger.db.database import Database
from flowledger.db.pg_direct import DirectEngine


def listen(db: Database, record: Callable[[str], None]) -> Callable[[], None]:
    """Call ``record(sql)`` for each statement ``db`` runs; returns the remover."""
    engine = db.engine.sync_engine

    def on_cursor(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        record(statement)

    def on_direct(_conn: Any, statement: str) -> None:
        record(statement)

    observers = db.engine.observers if isinstance(db.engine, DirectEngine) else []
    event.listen(engine, "before_cursor_execute", on_cursor)
    observers.append(on_direct)

    def remove() -> None:
        event.remove(engine, "before_cursor_execute", on_cursor)
        observers.remove(on_direct)

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
