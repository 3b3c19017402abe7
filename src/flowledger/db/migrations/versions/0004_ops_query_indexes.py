"""Indexes for the job ledger operations reads (SPEC L-23, L-24).

- ``ix_workflow_jobs_failure_clusters`` replaces
  ``ix_workflow_jobs_failure_fingerprint``: dead/failed jobs by
  (fingerprint, updated_at, id), including status, type, instance and trace
  on PostgreSQL, so every failure clustering is an index-only group-by and a
  cluster's newest members are a short index scan.
- ``ix_workflow_jobs_failure_types``: dead/failed jobs by (type,
  updated_at, id), for the newest members of a job-type cluster.
- ``ix_workflow_jobs_running_lease`` carries ``execution_deadline``
  (PostgreSQL INCLUDE), so the stuck count and the drain's candidate scan
  read only the partial index of running jobs.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29 10:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_DEAD_OR_FAILED = sa.text("status IN ('dead', 'failed')")
_RUNNING = sa.text("status = 'running'")


def upgrade() -> None:
    op.drop_index("ix_workflow_jobs_failure_fingerprint", table_name="workflow_jobs")
    op.create_index(
        "ix_workflow_jobs_failure_clusters",
        "workflow_jobs",
        ["last_error_fingerprint", "updated_at", "id"],
        unique=False,
        postgresql_include=["status", "type", "instance_id", "trace_id", "tenant_id"],
        postgresql_where=_DEAD_OR_FAILED,
        sqlite_where=_DEAD_OR_FAILED,
    )
    op.create_index(
        "ix_workflow_jobs_failure_types",
        "workflow_jobs",
        ["type", "updated_at", "id"],
        unique=False,
        postgresql_include=["status", "tenant_id"],
        postgresql_where=_DEAD_OR_FAILED,
        sqlite_where=_DEAD_OR_FAILED,
    )
    op.drop_index("ix_workflow_jobs_running_lease", table_name="workflow_jobs")
    op.create_index(
        "ix_workflow_jobs_running_lease",
        "workflow_jobs",
        ["lease_until"],
        unique=False,
        postgresql_include=["execution_deadline"],
        postgresql_where=_RUNNING,
        sqlite_where=_RUNNING,
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_jobs_running_lease", table_name="workflow_jobs")
    op.create_index(
        "ix_workflow_jobs_running_lease",
        "workflow_jobs",
        ["lease_until"],
        unique=False,
        postgresql_where=_RUNNING,
        sqlite_where=_RUNNING,
    )
    op.drop_index("ix_workflow_jobs_failure_types", table_name="workflow_jobs")
    op.drop_index("ix_workflow_jobs_failure_clusters", table_name="workflow_jobs")
    op.create_index(
        "ix_workflow_jobs_failure_fingerprint",
        "workflow_jobs",
        ["last_error_fingerprint", "status"],
        unique=False,
        postgresql_where=_DEAD_OR_FAILED,
        sqlite_where=_DEAD_OR_FAILED,
    )
