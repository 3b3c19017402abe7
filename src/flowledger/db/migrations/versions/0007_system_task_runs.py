"""The last run of each periodic system task (SPEC O-18 engine diagnostics):
``system_task_runs``, one row per task name.

Revision ID: 0007_task_runs
Revises: 0006
Create Date: 2026-12-01 11:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from flowledger.db.types import UTCDateTime

revision = "0007_task_runs"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "system_task_runs",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("node_id", sa.String(length=128), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column(
            "summary",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_system_task_runs")),
    )


def downgrade() -> None:
    op.drop_table("system_task_runs")
