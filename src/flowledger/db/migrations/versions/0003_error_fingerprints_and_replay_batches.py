"""Error fingerprints for failure clustering and replay batch ids (SPEC L-24).

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29 09:43:21.107685
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workflow_job_executions", schema=None) as batch_op:
        batch_op.add_column(sa.Column("error_fingerprint", sa.String(length=16), nullable=True))

    with op.batch_alter_table("workflow_jobs", schema=None) as batch_op:
        batch_op.add_column(
            sa.Column("last_error_fingerprint", sa.String(length=16), nullable=True)
        )
        batch_op.add_column(sa.Column("replay_batch_id", sa.String(length=32), nullable=True))
        batch_op.create_index(
            "ix_workflow_jobs_failure_fingerprint",
            ["last_error_fingerprint", "status"],
            unique=False,
            postgresql_where=sa.text("status IN ('dead', 'failed')"),
            sqlite_where=sa.text("status IN ('dead', 'failed')"),
        )
        batch_op.create_index(
            "ix_workflow_jobs_replay_batch",
            ["replay_batch_id"],
            unique=False,
            postgresql_where=sa.text("replay_batch_id IS NOT NULL"),
            sqlite_where=sa.text("replay_batch_id IS NOT NULL"),
        )


def downgrade() -> None:
    with op.batch_alter_table("workflow_jobs", schema=None) as batch_op:
        batch_op.drop_index(
            "ix_workflow_jobs_replay_batch",
            postgresql_where=sa.text("replay_batch_id IS NOT NULL"),
            sqlite_where=sa.text("replay_batch_id IS NOT NULL"),
        )
        batch_op.drop_index(
            "ix_workflow_jobs_failure_fingerprint",
            postgresql_where=sa.text("status IN ('dead', 'failed')"),
            sqlite_where=sa.text("status IN ('dead', 'failed')"),
        )
        batch_op.drop_column("replay_batch_id")
        batch_op.drop_column("last_error_fingerprint")

    with op.batch_alter_table("workflow_job_executions", schema=None) as batch_op:
        batch_op.drop_column("error_fingerprint")
