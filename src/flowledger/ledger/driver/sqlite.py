""":class:`SqliteLedger`: the ledger on SQLite. Every writing transaction
begins ``BEGIN IMMEDIATE`` under the process's write lock
(:class:`~flowledger.db.database.Database`), so the portable Core claim —
candidates selected and leased in one transaction — is already exclusive and
``FOR UPDATE`` compiles to nothing. Nothing differs from
:class:`~flowledger.ledger.driver.core.CoreLedger`; the class exists so the
selection names the dialect and a future SQLite-only path has its place."""

from __future__ import annotations

from flowledger.ledger.driver.core import CoreLedger


class SqliteLedger(CoreLedger):
    name = "sqlite"
