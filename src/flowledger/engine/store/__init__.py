"""The engine's store (issue 28 items 2, 4, 5): the SQL an engine step
sends, per dialect, beside the ledger's driver (``ledger/driver/``) — the
one place outside ``db/`` and the ledger driver that may choose SQL by the
database kind (``tests/unit/test_dialect_branches.py``).

:class:`~flowledger.engine.store.protocol.EngineStore` has one method per
kind of write; :class:`~flowledger.engine.store.core.CoreEngineStore` is the
portable implementation (one statement at a time),
:class:`~flowledger.engine.store.sqlite.SqliteEngineStore` and
:class:`~flowledger.engine.store.postgres.PostgresEngineStore` override what
differs. :func:`engine_store` picks one for a database, once: the
:class:`~flowledger.engine.Engine` holds it and every step carries it
(``Step.store``), so nothing looks the dialect up per statement. The
statements themselves:

- :mod:`~flowledger.engine.store.plan`: what a step writes at its end, as
  a plain value (:class:`~flowledger.engine.store.plan.StepPlan`), and the
  fixed shapes ``step_commit`` writes it in;
- :mod:`~flowledger.engine.store.start`: a new instance and its start token;
- :mod:`~flowledger.engine.store.reserved_ids`: the ids a step reserves in a
  statement it sends anyway (PostgreSQL);
- :mod:`~flowledger.engine.store.tokens`: a fork, a join firing, one token
  consumed;
- :mod:`~flowledger.engine.store.json_rows`: one table's rows as a JSON
  document, its columns from the table's definition;
- :mod:`~flowledger.engine.store.writes`: a step's rows but its jobs
  (:class:`~flowledger.engine.store.writes.StepRows`: token moves, outbox,
  form writes, trace, held tasks and forks);
- :mod:`~flowledger.engine.store.instance_end`: the statement that ends an
  instance;
- :mod:`~flowledger.engine.store.migrate`: one instance's migration to
  another definition version (issue 30);
- :mod:`~flowledger.engine.store.job_lock`: a job step's first statement
  (instance lock, a delay's task finish, the ledger's fenced job lock and
  receipt, composed from the ledger's exported fence).

The engine's modules above it (``step``, ``tokens``, ``tasks``,
``lifecycle``, ``instances``, ``write_buffer``) decide what to write; the
store says how, on each backend. Only ``db/`` and the ledger's modules are
imported from here."""

from flowledger.db.database import Database
from flowledger.db.dialects import POSTGRESQL, SQLITE
from flowledger.engine.store.core import CoreEngineStore
from flowledger.engine.store.postgres import PostgresEngineStore
from flowledger.engine.store.protocol import EngineStore
from flowledger.engine.store.sqlite import SqliteEngineStore
from flowledger.ledger.driver import ledger_driver

__all__ = ["EngineStore", "engine_store"]

_KINDS: dict[str, type[CoreEngineStore]] = {
    SQLITE: SqliteEngineStore,
    POSTGRESQL: PostgresEngineStore,
}


def engine_store(db: Database) -> EngineStore:
    """The engine store of ``db``'s kind of database, with ``db``'s ledger
    driver, chosen once by whoever builds an engine (an
    :class:`~flowledger.engine.Engine`, a recovery run)."""
    return _KINDS[db.dialect](ledger_driver(db))
