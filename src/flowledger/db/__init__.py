"""Storage: the schema (SQLAlchemy Core), migrations (Alembic), engine
creation and the few statements that differ by dialect. Nothing above this
package writes dialect-specific SQL. It never imports ledger, worker or any
higher layer."""

# Every table module registers in one metadata; loading them here, in the
# order of ``schema``'s imports, means importing any one table module first
# (``engine_schema``, ``health_schema``) cannot meet a half-initialised one.
from flowledger.db import schema as _schema  # noqa: F401
