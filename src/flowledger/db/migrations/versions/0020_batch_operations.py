"""Recorded batch operations (issue 29 item 4): ``workflow_batch_operations``
(one row per operator batch: kind, state, actor, reason, tenant scope,
request, counts per outcome and per-item results). Both backends.

Revision ID: 0020
Revises: 0019
Create Date: 2026-12-06 20:10:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from flowledger.db.types import JsonType, UTCDateTime

revision = "0020"
down_revision = "0019"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workflow_batch_operations",
        sa.Column("id", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=64), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("dry_run", sa.Boolean(), nullable=False),
        sa.Column("actor", sa.String(length=128), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("tenant_scope", sa.Text(), nullable=True),
        sa.Column("request", JsonType, nullable=False),
        sa.Column("total", sa.Integer(), nullable=False),
        sa.Column("done", sa.Integer(), nullable=False),
        sa.Column("skipped", sa.Integer(), nullable=False),
        sa.Column("failed", sa.Integer(), nullable=False),
        sa.Column("items", JsonType, nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "state IN ('running', 'completed', 'failed')",
            name=op.f("ck_workflow_batch_operations_state"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_batch_operations")),
    )
    op.create_index(
        "ix_workflow_batch_operations_started",
        "workflow_batch_operations",
        ["started_at", "id"],
    )
    op.create_index(
        "ix_workflow_batch_operations_scope",
        "workflow_batch_operations",
        ["tenant_scope", "started_at", "id"],
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_batch_operations_scope", "workflow_batch_operations")
    op.drop_index("ix_workflow_batch_operations_started", "workflow_batch_operations")
    op.drop_table("workflow_batch_operations")
