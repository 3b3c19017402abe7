"""Paused scopes of the job ledger (issue 31 item 3): ``workflow_job_pauses``,
one row per paused pool or job type, with who paused it, why and since when.
Both backends.

Revision ID: 0016
Revises: 0015
Create Date: 2026-12-06 03:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from flowledger.db.types import UTCDateTime

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workflow_job_pauses",
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("value", sa.String(length=64), nullable=False),
        sa.Column("paused_by", sa.String(length=128), nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("since", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "scope IN ('pool', 'job_type')", name=op.f("ck_workflow_job_pauses_scope")
        ),
        sa.PrimaryKeyConstraint("scope", "value", name=op.f("pk_workflow_job_pauses")),
    )


def downgrade() -> None:
    op.drop_table("workflow_job_pauses")
