"""The queue's figures from the claim indexes alone (issue 34 item 3, SPEC
O-18, L-23), PostgreSQL only; SQLite is unchanged.

``ix_workflow_jobs_claim_due`` (pending jobs by pool and ``run_at``) also
carries ``type`` and ``tenant_id``, and ``ix_workflow_jobs_running_lease``
(running jobs by ``lease_until``) also ``pool`` and ``tenant_id``: the engine
diagnostics' queue — pending, due and oldest due per pool and per type,
running per pool, tenant-scoped for a scoped caller — is then an index-only
scan of the live jobs instead of one heap page per pending or running job
(on the volume benchmark's 64,592 pending and 8,724 running jobs: 373 →
59 ms and 34 → 6 ms). The claim statements use these indexes as before;
their entries grow by the two columns.

Large tables: each rebuild reads the whole table under a SHARE lock (writes
to ``workflow_jobs`` wait: ~5-20 s at 12 M jobs). To avoid the pause, build
each index beforehand without blocking writes; the upgrade then skips it
(it looks at the index's columns)::

    CREATE INDEX CONCURRENTLY ix_workflow_jobs_claim_due_0026
        ON workflow_jobs (pool, run_at, id) INCLUDE (type, tenant_id)
        WHERE status = 'pending';
    DROP INDEX CONCURRENTLY ix_workflow_jobs_claim_due;
    ALTER INDEX ix_workflow_jobs_claim_due_0026 RENAME TO ix_workflow_jobs_claim_due;

    CREATE INDEX CONCURRENTLY ix_workflow_jobs_running_lease_0026
        ON workflow_jobs (lease_until)
        INCLUDE (execution_deadline, id, pool, tenant_id)
        WHERE status = 'running';
    DROP INDEX CONCURRENTLY ix_workflow_jobs_running_lease;
    ALTER INDEX ix_workflow_jobs_running_lease_0026
        RENAME TO ix_workflow_jobs_running_lease;

Revision ID: 0026
Revises: 0025
Create Date: 2026-12-07 03:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0026"
down_revision = "0025"
branch_labels = None
depends_on = None

# name: (key columns, included before, included after, predicate)
INDEXES = {
    "ix_workflow_jobs_claim_due": (
        ["pool", "run_at", "id"],
        [],
        ["type", "tenant_id"],
        "status = 'pending'",
    ),
    "ix_workflow_jobs_running_lease": (
        ["lease_until"],
        ["execution_deadline", "id"],
        ["execution_deadline", "id", "pool", "tenant_id"],
        "status = 'running'",
    ),
}
_HAS_COLUMN = """
SELECT EXISTS (
    SELECT 1 FROM pg_index i JOIN pg_attribute a
        ON a.attrelid = i.indrelid AND a.attnum = ANY (i.indkey)
    WHERE i.indexrelid = to_regclass(:index) AND a.attname = 'tenant_id'
)
"""


def _rebuild(name: str, columns: list[str], include: list[str], where: str) -> None:
    op.drop_index(name, table_name="workflow_jobs")
    op.create_index(
        name,
        "workflow_jobs",
        columns,
        postgresql_include=include,
        postgresql_where=sa.text(where),
    )


def upgrade() -> None:
    bind = op.get_bind()
    if bind.dialect.name != "postgresql":
        return
    for name, (columns, _before, after, where) in INDEXES.items():
        if not bind.execute(sa.text(_HAS_COLUMN), {"index": name}).scalar_one():
            _rebuild(name, columns, after, where)


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name, (columns, before, _after, where) in INDEXES.items():
        _rebuild(name, columns, before, where)
