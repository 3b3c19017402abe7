"""The foreign keys from the job history to ``workflow_jobs`` (issue 34):
the attempts (``workflow_job_executions``) and the step receipts
(``workflow_job_effects``) declare ``job_id → workflow_jobs.id``, but on
PostgreSQL the constraint is not created (and migration 0021 drops it).

Why: with the key, every deleted job fires a cascade that probes each of
the ~100 day partitions of the attempts (and the receipts' index) even after
retention removed the job's rows itself; at a day's worth of expired jobs
that was most of a 224 s retention pass. What the key guaranteed is kept by
the code instead: every path that deletes jobs deletes their attempts and
receipts first, in the same transaction
(:meth:`flowledger.ledger.driver.core_maintenance.MaintenanceCore.jobs_purge_batch`,
:func:`flowledger.ledger.driver.forge.job_forget`), and attempts and
receipts are only written next to an update of their (locked, existing) job.
SQLite keeps both keys (its tables are small and it enforces them).

Owns the names and the DDL rule only (no I/O)."""

from __future__ import annotations

from sqlalchemy import ForeignKeyConstraint
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.compiler import DDLCompiler

JOBS = "workflow_jobs"
HISTORY_TABLES = ("workflow_job_executions", "workflow_job_effects")
# the constraints' names (the metadata's naming convention), for the
# migration and for comparing the declared schema with a migrated one
SQLITE_ONLY_KEYS = frozenset(f"fk_{table}_job_id_{JOBS}" for table in HISTORY_TABLES)


def is_sqlite_only(constraint: ForeignKeyConstraint) -> bool:
    """True for a history table's key to ``workflow_jobs``."""
    table = constraint.table
    return getattr(table, "name", None) in HISTORY_TABLES and constraint.referred_table.name == JOBS


@compiles(ForeignKeyConstraint, "postgresql")
def _foreign_key(element: ForeignKeyConstraint, compiler: DDLCompiler, **kw: object) -> str | None:
    """No ``job_id`` key from the history tables on PostgreSQL: ``None``
    leaves the constraint out of ``CREATE TABLE``."""
    if is_sqlite_only(element):
        return None
    return compiler.visit_foreign_key_constraint(element, **kw)
