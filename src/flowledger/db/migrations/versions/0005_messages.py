"""In-app messages (SPEC X-7): ``workflow_messages``, one row per message to
one recipient, with the index that serves "my (unread) messages, newest
first".

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-30 09:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from flowledger.db.types import UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "workflow_messages",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("recipient", sa.String(length=128), nullable=False),
        sa.Column("title", sa.String(length=255), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("link", sa.String(length=1024), nullable=True),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("read_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_messages")),
    )
    op.create_index(
        "ix_workflow_messages_recipient",
        "workflow_messages",
        ["recipient", "read_at", "id"],
        unique=False,
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_messages_recipient", table_name="workflow_messages")
    op.drop_table("workflow_messages")
