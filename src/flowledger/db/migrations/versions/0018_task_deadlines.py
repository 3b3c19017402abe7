"""Deadlines and escalation (issue 31 item 4): ``workflow_tasks`` gains
``escalation_step`` (the last step of its node's escalation chain done;
0 once the due time passed) and ``escalated_at``; ``users`` gains
``manager_id`` (whom a ``transfer`` to ``manager`` hands a user's task to). Both
backends.

Revision ID: 0018_task_deadlines
Revises: 0017
Create Date: 2026-12-06 20:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from flowledger.db.types import UTCDateTime

revision = "0018_task_deadlines"
down_revision = "0017"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("workflow_tasks") as batch:
        batch.add_column(sa.Column("escalation_step", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("escalated_at", UTCDateTime(), nullable=True))
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("manager_id", sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("manager_id")
    with op.batch_alter_table("workflow_tasks") as batch:
        batch.drop_column("escalated_at")
        batch.drop_column("escalation_step")
