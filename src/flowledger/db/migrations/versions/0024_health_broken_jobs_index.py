"""Broken jobs by type and instance (SPEC O-16, issue 34 item 3):
``ix_workflow_jobs_broken`` on ``workflow_jobs`` (type, instance_id),
dead and failed jobs only, on both backends; on PostgreSQL it includes
the columns the health rules read of such a job (id, status, node_key,
task_id, updated_at, last_error_code, tenant_id), so they are read from
the index alone.

The health inspection's ``external_dispatch_failed`` /
``trigger_execution_failed`` start from the failed and dead jobs of their
type, and ``webhook_delivery_failed`` groups the dead webhook deliveries
by instance: without this index each read every such job's row from the
table (tens of thousands of scattered pages on the volume benchmark's 12M
jobs). Writes: one entry when a job dies or fails, removed when it is
retried or skipped.

Revision ID: 0024_health
Revises: 0023
Create Date: 2026-12-07 01:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0024_health"
down_revision = "0023"
branch_labels = None
depends_on = None

_DEAD_OR_FAILED = "status IN ('dead', 'failed')"


def upgrade() -> None:
    op.create_index(
        "ix_workflow_jobs_broken",
        "workflow_jobs",
        ["type", "instance_id"],
        postgresql_include=[
            "id",
            "status",
            "node_key",
            "task_id",
            "updated_at",
            "last_error_code",
            "tenant_id",
        ],
        postgresql_where=sa.text(_DEAD_OR_FAILED),
        sqlite_where=sa.text(_DEAD_OR_FAILED),
        if_not_exists=True,  # a large database may have built it CONCURRENTLY first
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_jobs_broken", table_name="workflow_jobs")
