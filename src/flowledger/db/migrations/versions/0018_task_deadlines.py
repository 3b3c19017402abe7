"""Deadlines and escalation (issue 31 item 4): ``workflow_tasks`` gains
``escalation_step`` (the last step of its node's escalation chain done;
0 once the due time passed) and ``escalated_at``; ``users`` gains
``manager_id`` (whom a ``transfer`` to ``manager`` hands a user's task to).
``ix_workflow_tasks_due`` also includes ``escalated_at`` (PostgreSQL), so
the analytics timeouts panel's escalated count stays an index-only scan.
Both backends.

Revision ID: 0018
Revises: 0017
Create Date: 2026-12-06 20:00:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from flowledger.db.types import UTCDateTime

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None


_PENDING_DUE = "status = 'pending' AND due_at IS NOT NULL"
_DUE_INCLUDE = ["tenant_id", "definition_key", "instance_id", "node_key", "assignee"]


def _due_index(include: list[str]) -> None:
    op.create_index(
        "ix_workflow_tasks_due",
        "workflow_tasks",
        ["due_at"],
        postgresql_include=include,
        postgresql_where=sa.text(_PENDING_DUE),
        sqlite_where=sa.text(_PENDING_DUE),
    )


def upgrade() -> None:
    op.drop_index("ix_workflow_tasks_due", table_name="workflow_tasks")
    with op.batch_alter_table("workflow_tasks") as batch:
        batch.add_column(sa.Column("escalation_step", sa.Integer(), nullable=True))
        batch.add_column(sa.Column("escalated_at", UTCDateTime(), nullable=True))
    _due_index([*_DUE_INCLUDE, "escalated_at"])
    with op.batch_alter_table("users") as batch:
        batch.add_column(sa.Column("manager_id", sa.String(length=128), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("users") as batch:
        batch.drop_column("manager_id")
    op.drop_index("ix_workflow_tasks_due", table_name="workflow_tasks")
    with op.batch_alter_table("workflow_tasks") as batch:
        batch.drop_column("escalated_at")
        batch.drop_column("escalation_step")
    _due_index(_DUE_INCLUDE)
