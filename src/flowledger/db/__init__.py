"""Storage: the schema (SQLAlchemy Core), migrations (Alembic), engine
creation and transactions (:mod:`~flowledger.db.database`), and the SQL that
differs by dialect: the PostgreSQL claim and settlement statements
(:mod:`~flowledger.db.pg_ledger`) and their dedicated connection
(:mod:`~flowledger.db.pg_hotpath`), the upsert construct
(:mod:`~flowledger.db.dialects`), the per-dialect expression constructs
(:mod:`~flowledger.db.portable`), the aggregates whose query differs by
dialect (:mod:`~flowledger.db.aggregates`), per-transaction planner settings
(:mod:`~flowledger.db.planner`), wake hints (:mod:`~flowledger.db.wake`).
Above this package the ledger's drivers are chosen by the dialect name this
package reports; nothing else above it branches on the dialect
(``tests/unit/test_dialect_branches.py``; while issue 16 is in progress it
allows the engine's write buffer, the worker's wake listener and clock
choice and the health inspection's ``SET LOCAL``). It never imports ledger,
worker or any higher layer."""

# Every table module registers in one metadata; loading them here, in the
# order of ``schema``'s imports, means importing any one table module first
# (``engine_schema``, ``health_schema``) cannot meet a half-initialised one.
from flowledger.db import schema as _schema  # noqa: F401
