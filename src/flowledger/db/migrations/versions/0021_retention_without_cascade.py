"""Retention without the job cascade (issue 34, Done when: one retention
pass over a day of expired history ≤ 10 s):

- PostgreSQL: drops the foreign keys ``workflow_job_executions.job_id`` and
  ``workflow_job_effects.job_id`` → ``workflow_jobs.id`` (``ON DELETE
  CASCADE``): each deleted job's cascade probed every day partition of the
  attempts, after retention had already removed them
  (:mod:`flowledger.db.job_history_keys` says what replaces the key).
  Dropping a key takes a short ACCESS EXCLUSIVE lock on the three tables and
  rewrites nothing. SQLite keeps both keys.
- Both backends: ``ix_workflow_jobs_settled`` (``updated_at, id`` of the
  succeeded and canceled jobs), the order retention removes them in, so a
  pass reads expired jobs only. Built inside the migration's transaction:
  writes to ``workflow_jobs`` wait for the build (reads do not). Where
  writes cannot pause, create it beforehand with ``CREATE INDEX
  CONCURRENTLY IF NOT EXISTS ix_workflow_jobs_settled ON workflow_jobs
  (updated_at, id) WHERE status IN ('succeeded', 'canceled')``; the
  migration then skips it.

Revision ID: 0021
Revises: 0020
Create Date: 2026-12-06 23:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from flowledger.db.job_history_keys import HISTORY_TABLES, JOBS

revision = "0021"
down_revision = "0020"
branch_labels = None
depends_on = None

_INDEX = "ix_workflow_jobs_settled"
_SETTLED = sa.text("status IN ('succeeded', 'canceled')")


def _key(table: str) -> str:
    return f"fk_{table}_job_id_{JOBS}"


def upgrade() -> None:
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        for table in HISTORY_TABLES:
            op.execute(f"ALTER TABLE {table} DROP CONSTRAINT IF EXISTS {_key(table)}")
        op.create_index(
            _INDEX, JOBS, ["updated_at", "id"], postgresql_where=_SETTLED, if_not_exists=True
        )
    else:
        op.create_index(_INDEX, JOBS, ["updated_at", "id"], sqlite_where=_SETTLED)


def downgrade() -> None:
    op.drop_index(_INDEX, table_name=JOBS)
    if op.get_bind().dialect.name != "postgresql":
        return
    for table in HISTORY_TABLES:
        # an attempt or receipt whose job is gone would fail the key: none
        # may exist (every job delete removes them first)
        op.execute(
            f"ALTER TABLE {table} ADD CONSTRAINT {_key(table)} FOREIGN KEY (job_id) "
            f"REFERENCES {JOBS} (id) ON DELETE CASCADE"
        )
