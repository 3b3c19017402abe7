"""Schema migrations: Alembic, driven programmatically so ``flowledger
migrate`` needs no ini file on the user's side. Owns upgrading and reporting
the current revision; it never touches data outside the migrations. Alembic
is imported when a function here runs, not with the module: a worker, which
never migrates, starts without it (about 0.3 s of its start-up)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from flowledger.db.database import Database

if TYPE_CHECKING:
    from alembic.config import Config

_MIGRATIONS = Path(__file__).parent / "migrations"


def alembic_config() -> Config:
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(_MIGRATIONS))
    return config


def _upgrade(sync_conn: Any, revision: str) -> None:
    from alembic import command

    config = alembic_config()
    config.attributes["connection"] = sync_conn
    command.upgrade(config, revision)


async def upgrade(db: Database, revision: str = "head") -> None:
    """Migrate ``db`` to ``revision`` (default: the newest)."""
    async with db.engine.begin() as conn:
        await conn.run_sync(_upgrade, revision)


def head_revision() -> str | None:
    from alembic.script import ScriptDirectory

    return ScriptDirectory.from_config(alembic_config()).get_current_head()


async def current_revision(db: Database) -> str | None:
    from alembic.runtime.migration import MigrationContext

    def _current(sync_conn: Any) -> str | None:
        return MigrationContext.configure(sync_conn).get_current_revision()

    async with db.engine.connect() as conn:
        return await conn.run_sync(_current)
