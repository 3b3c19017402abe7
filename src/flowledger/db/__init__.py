"""Storage: the schema (SQLAlchemy Core), migrations (Alembic), engine
creation and transactions (:mod:`~flowledger.db.database`), and the SQL that
differs by dialect: the PostgreSQL claim and settlement statements
(:mod:`~flowledger.db.pg_ledger`) and their dedicated connection
(:mod:`~flowledger.db.pg_hotpath`), the upsert construct
(:mod:`~flowledger.db.dialects`), wake hints (:mod:`~flowledger.db.wake`).
Above this package the ledger's drivers are chosen by the dialect name this
package reports, and upserts use :func:`~flowledger.db.dialects.upsert`.
Still branching on the dialect above it (read models, not writers of the
job tables): the SQL date/interval arithmetic and ``SET LOCAL`` planner
settings of ``ops/`` (analytics_sql, prometheus, runtime_status,
instance_diagnostics_jobs, consistency, health_inspection), the SQLite
keyword search flag passed by the instance list, and the worker's wake
listener and clock choice. It never imports ledger, worker or any higher
layer."""

# Every table module registers in one metadata; loading them here, in the
# order of ``schema``'s imports, means importing any one table module first
# (``engine_schema``, ``health_schema``) cannot meet a half-initialised one.
from flowledger.db import schema as _schema  # noqa: F401
