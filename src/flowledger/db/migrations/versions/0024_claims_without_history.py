"""Claims that do not slow down with history (issue 34 item 4), PostgreSQL
only; SQLite is unchanged.

1. ``ix_workflow_jobs_running_lease`` (running jobs by ``lease_until``) also
   carries ``id``: the lease rescuer finds the expired jobs with an
   index-only scan instead of reading every running job's row (on the
   volume database 2,600-8,700 heap pages scattered over 90 days, up to 6 s
   at a worker's start, beside its first claims).
2. Autovacuum settings of ``workflow_jobs`` (:data:`AUTOVACUUM`): at the
   default scale factor (20 % of the table) a table of 12 M jobs is
   vacuumed after 2.4 M dead row versions — months at a few thousand jobs a
   day, since retention's deletes and every job's claim and settlement add
   dead versions slowly against that size. Meanwhile the claim path's
   partial indexes (pending, running, live jobs) keep the entries of every
   job already claimed and every job retention removed, and each claim
   walked them (measured: a 20,000-job drain read 104 index pages of
   ``ix_workflow_jobs_claim_due`` per job against 18 after a vacuum). With
   a 1 % scale factor and a fixed floor the table is vacuumed every ~10,000
   + 1 % dead versions; on a table whose old pages are all-visible such a
   vacuum reads only the recently written pages.

Large tables: the index rebuild of step 1 reads the whole table under a
SHARE lock (writes to ``workflow_jobs`` wait: ~10-20 s at 12 M jobs). To
avoid that pause build it beforehand without blocking writes and the
upgrade then skips it (it looks at the index's columns)::

    CREATE INDEX CONCURRENTLY ix_workflow_jobs_running_lease_0024
        ON workflow_jobs (lease_until) INCLUDE (execution_deadline, id)
        WHERE status = 'running';
    DROP INDEX CONCURRENTLY ix_workflow_jobs_running_lease;
    ALTER INDEX ix_workflow_jobs_running_lease_0024
        RENAME TO ix_workflow_jobs_running_lease;

Step 2 is a catalog change (SHARE UPDATE EXCLUSIVE lock, no rewrite).

Revision ID: 0024
Revises: 0023
Create Date: 2026-12-07 02:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024"
down_revision = "0023"
branch_labels = None
depends_on = None

_RUNNING = "status = 'running'"
INDEX = "ix_workflow_jobs_running_lease"
AUTOVACUUM = {
    "autovacuum_vacuum_scale_factor": "0.01",
    "autovacuum_vacuum_threshold": "10000",
    "autovacuum_vacuum_insert_scale_factor": "0.01",
    "autovacuum_vacuum_insert_threshold": "10000",
    "autovacuum_analyze_scale_factor": "0.02",
}
_HAS_ID = """
SELECT EXISTS (
    SELECT 1 FROM pg_index i JOIN pg_attribute a
        ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
    WHERE i.indexrelid = to_regclass('ix_workflow_jobs_running_lease') AND a.attname = 'id'
)
"""


def _rebuild(include: list[str]) -> None:
    op.drop_index(INDEX, table_name="workflow_jobs")
    op.create_index(
        INDEX,
        "workflow_jobs",
        ["lease_until"],
        postgresql_include=include,
        postgresql_where=sa.text(_RUNNING),
    )


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    if not op.get_bind().exec_driver_sql(_HAS_ID).scalar_one():
        _rebuild(["execution_deadline", "id"])
    settings = ", ".join(f"{name} = {value}" for name, value in AUTOVACUUM.items())
    op.execute(f"ALTER TABLE workflow_jobs SET ({settings})")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"ALTER TABLE workflow_jobs RESET ({', '.join(AUTOVACUUM)})")
    _rebuild(["execution_deadline"])
