"""The SQLite engine store (issue 28 item 2): the portable Core store as it
is — SQLite runs each write as its own statement in process, under the
database's single writer, and reserves no ids."""

from __future__ import annotations

from flowledger.engine.store.core import CoreEngineStore


class SqliteEngineStore(CoreEngineStore):
    """The engine's writes on SQLite (the Core store's)."""

    name = "sqlite"
