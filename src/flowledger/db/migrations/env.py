"""Alembic environment: runs the migrations on the connection handed over by
:func:`flowledger.db.migrate.upgrade` (both PostgreSQL and SQLite)."""

from __future__ import annotations

from typing import Any

from alembic import context

from flowledger.db.schema import metadata


def _run(connection: Any) -> None:
    context.configure(
        connection=connection,
        target_metadata=metadata,
        render_as_batch=connection.dialect.name == "sqlite",
        compare_type=True,
    )
    with context.begin_transaction():
        context.run_migrations()


connection = context.config.attributes.get("connection")
if connection is None:
    raise RuntimeError("run migrations through `flowledger migrate`")
_run(connection)
