"""Storage: the schema (SQLAlchemy Core), migrations (Alembic), engine
creation and transactions (:mod:`~flowledger.db.database`), the dedicated
fast-path connections (:mod:`~flowledger.db.pg_hotpath`,
:mod:`~flowledger.db.sqlite_hotpath`; they only transport what the ledger
driver sends) and the portable constructs whose SQL differs by dialect: the
upsert (:mod:`~flowledger.db.dialects`), the expression constructs
(:mod:`~flowledger.db.portable`), the aggregates
(:mod:`~flowledger.db.aggregates`), per-transaction planner settings
(:mod:`~flowledger.db.planner`), and wake hints (:mod:`~flowledger.db.wake`).
The ledger's own statements live in its driver (``ledger/driver/``), the
engine's in its store (``engine/store/``); those and this package are the
only places that branch on the dialect
(``tests/unit/test_dialect_branches.py``). It never imports ledger, engine or
any higher layer."""

# Every table module registers in one metadata; loading them here, in the
# order of ``schema``'s imports, means importing any one table module first
# (``engine_schema``, ``health_schema``) cannot meet a half-initialised one.
from flowledger.db import schema as _schema  # noqa: F401
