"""Health inspection and health history (SPEC O-16): the
``workflow_health_snapshots`` table and the partial indexes serving the
inspection's rules (see :mod:`flowledger.db.health_schema`).

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-01 11:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from flowledger.db.types import UTCDateTime

_JSON = sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_OPEN = sa.text("status IN ('pending', 'waiting')")
_RUNNING = sa.text("status = 'running'")
_WITH_TASK = sa.text("task_id IS NOT NULL")
_TASK_INCLUDE = [
    "id",
    "instance_id",
    "token_id",
    "status",
    "tenant_id",
    "node_key",
    "assignee",
    "due_at",
]


def upgrade() -> None:
    op.create_table(
        "workflow_health_snapshots",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("taken_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("score", sa.Integer(), nullable=False),
        sa.Column("by_rule", _JSON, nullable=False),
        sa.Column("by_level", _JSON, nullable=False),
        sa.Column("runtime", _JSON, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_health_snapshots")),
        sa.UniqueConstraint("taken_at", name=op.f("uq_workflow_health_snapshots_taken_at")),
    )
    op.create_index(
        "ix_workflow_tasks_open_created",
        "workflow_tasks",
        ["created_at"],
        unique=False,
        postgresql_include=_TASK_INCLUDE,
        postgresql_where=_OPEN,
        sqlite_where=_OPEN,
    )
    op.create_index(
        "ix_workflow_tasks_open_kind",
        "workflow_tasks",
        ["kind", "created_at"],
        unique=False,
        postgresql_include=_TASK_INCLUDE,
        postgresql_where=_OPEN,
        sqlite_where=_OPEN,
    )
    op.create_index(
        "ix_workflow_tasks_open_instance",
        "workflow_tasks",
        ["instance_id"],
        unique=False,
        postgresql_where=_OPEN,
        sqlite_where=_OPEN,
    )
    op.create_index(
        "ix_workflow_jobs_task",
        "workflow_jobs",
        ["type", "task_id"],
        unique=False,
        postgresql_include=["id", "status", "run_at", "instance_id"],
        postgresql_where=_WITH_TASK,
        sqlite_where=_WITH_TASK,
    )
    op.create_index(
        "ix_workflow_instances_running",
        "workflow_instances",
        ["id"],
        unique=False,
        postgresql_include=["tenant_id", "definition_key", "updated_at"],
        postgresql_where=_RUNNING,
        sqlite_where=_RUNNING,
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_instances_running", table_name="workflow_instances")
    op.drop_index("ix_workflow_jobs_task", table_name="workflow_jobs")
    op.drop_index("ix_workflow_tasks_open_instance", table_name="workflow_tasks")
    op.drop_index("ix_workflow_tasks_open_kind", table_name="workflow_tasks")
    op.drop_index("ix_workflow_tasks_open_created", table_name="workflow_tasks")
    op.drop_table("workflow_health_snapshots")
