"""Storage, below every other layer but the shared vocabulary; it never
imports ledger, engine or anything above them.

- The declared schema: :mod:`~flowledger.db.schema` (the job ledger and the
  worker registry, one SQLAlchemy metadata) and a ``*_schema`` module per
  area registering its tables and indexes on it (:mod:`~flowledger.db.engine_schema`,
  :mod:`~flowledger.db.compensation_schema`, :mod:`~flowledger.db.alert_schema`, …);
  column types that behave alike on both backends (:mod:`~flowledger.db.types`).
- Migrations: Alembic, driven by :mod:`~flowledger.db.migrate` (``migrations/``).
- Engines and transactions: :mod:`~flowledger.db.database` (both backends),
  :mod:`~flowledger.db.urls` (URL normalisation),
  :mod:`~flowledger.db.idle_ping` (liveness of pooled PostgreSQL
  connections) and :mod:`~flowledger.db.sqlite_inline` (the SQLite driver
  connection whose writes run on the event loop's thread).
- Statement transport for the write paths, carrying what the ledger driver
  and the engine store send: :mod:`~flowledger.db.pg_hotpath` and
  :mod:`~flowledger.db.sqlite_hotpath` (the ledger's dedicated fast-path
  connections) and :mod:`~flowledger.db.pg_direct` (Core statements on
  PostgreSQL without SQLAlchemy's per-statement machinery).
- The portable constructs whose SQL differs by dialect, so that code above
  ``db/`` never branches on it: the upsert (:mod:`~flowledger.db.dialects`),
  expressions (:mod:`~flowledger.db.portable`), aggregates
  (:mod:`~flowledger.db.aggregates`), per-transaction planner settings
  (:mod:`~flowledger.db.planner`), literal ``LIKE`` (:mod:`~flowledger.db.like`)
  and the health inspection's two dialect pieces (:mod:`~flowledger.db.health_sql`).
- Wake hints: published by :mod:`~flowledger.db.wake`, received by
  :mod:`~flowledger.db.wake_listen`.

The ledger's own statements live in its driver (``ledger/driver/``), the
engine's in its store (``engine/store/``); those and this package are the
only places that branch on the dialect (``tests/unit/test_dialect_branches.py``)."""

# Every table module registers in one metadata; loading them here, in the
# order of ``schema``'s imports, means importing any one table module first
# (``engine_schema``, ``health_schema``) cannot meet a half-initialised one.
from flowledger.db import schema as _schema  # noqa: F401
