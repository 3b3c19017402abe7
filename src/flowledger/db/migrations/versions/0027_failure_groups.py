"""Failure clusters by reason from a narrow index (issue 34 item 3, SPEC L-24).

``ix_workflow_jobs_failure_groups``: the dead and failed jobs by
(``last_error_fingerprint``, ``type``), including ``status``, ``updated_at``
and ``tenant_id`` on PostgreSQL. The clusters' group-by — count, first and
last seen per (reason, type), tenant-scoped or not — reads it in index
order: a streaming group-by over entries a third the size of
``ix_workflow_jobs_failure_clusters``' (which still finds each cluster's
newest members). On the volume benchmark's 251,264 failed and dead jobs:
68 → 34 ms. Only rows that fail or die enter it (a partial index), so the
claim and settlement of a job that succeeds never touch it.

Large tables: the build reads the whole table under a SHARE lock (writes to
``workflow_jobs`` wait: ~5-20 s at 12 M jobs). To avoid the pause, build it
beforehand without blocking writes; the upgrade then skips it::

    CREATE INDEX CONCURRENTLY ix_workflow_jobs_failure_groups
        ON workflow_jobs (last_error_fingerprint, type)
        INCLUDE (status, updated_at, tenant_id)
        WHERE status IN ('dead', 'failed');

Revision ID: 0027
Revises: 0026
Create Date: 2026-12-07 04:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0027"
down_revision = "0026"
branch_labels = None
depends_on = None

NAME = "ix_workflow_jobs_failure_groups"
DEAD_OR_FAILED = "status IN ('dead', 'failed')"


def upgrade() -> None:
    bind = op.get_bind()
    exists = sa.inspect(bind).get_indexes("workflow_jobs")
    if any(index["name"] == NAME for index in exists):
        return  # built beforehand (CONCURRENTLY, see above)
    op.create_index(
        NAME,
        "workflow_jobs",
        ["last_error_fingerprint", "type"],
        postgresql_include=["status", "updated_at", "tenant_id"],
        postgresql_where=sa.text(DEAD_OR_FAILED),
        sqlite_where=sa.text(DEAD_OR_FAILED),
    )


def downgrade() -> None:
    op.drop_index(NAME, table_name="workflow_jobs")
