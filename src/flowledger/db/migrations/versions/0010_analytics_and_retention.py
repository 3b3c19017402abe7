"""Analytics indexes (SPEC O-14) and data retention (O-20): the covering
indexes of the analytics panels on instances and tasks, the retention policy
overrides and the record of retention runs.

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-01 11:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from flowledger.db.types import JsonType, UTCDateTime

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _indexes() -> None:
    finished = sa.text("finished_at IS NOT NULL")
    pending_due = sa.text("status = 'pending' AND due_at IS NOT NULL")
    completed = sa.text("status = 'completed'")
    pending = sa.text("status = 'pending'")
    op.create_index(
        "ix_workflow_instances_created",
        "workflow_instances",
        ["created_at"],
        postgresql_include=["tenant_id", "definition_key", "status", "finished_at"],
    )
    op.create_index(
        "ix_workflow_instances_finished",
        "workflow_instances",
        ["finished_at"],
        postgresql_include=["tenant_id", "definition_key", "status", "created_at"],
        postgresql_where=finished,
        sqlite_where=finished,
    )
    op.create_index(
        "ix_workflow_tasks_due",
        "workflow_tasks",
        ["due_at"],
        postgresql_include=["tenant_id", "instance_id", "node_key", "assignee"],
        postgresql_where=pending_due,
        sqlite_where=pending_due,
    )
    op.create_index(
        "ix_workflow_tasks_finished",
        "workflow_tasks",
        ["finished_at"],
        postgresql_include=[
            "tenant_id",
            "instance_id",
            "node_key",
            "assignee",
            "kind",
            "created_at",
        ],
        postgresql_where=completed,
        sqlite_where=completed,
    )
    op.create_index(
        "ix_workflow_tasks_pending",
        "workflow_tasks",
        ["instance_id"],
        postgresql_include=["tenant_id", "node_key", "assignee", "kind"],
        postgresql_where=pending,
        sqlite_where=pending,
    )


def upgrade() -> None:
    _indexes()
    op.create_table(
        "workflow_retention_policies",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("keep_days", sa.Integer(), nullable=False),
        sa.Column("updated_by", sa.String(length=128), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint("keep_days >= 1", name=op.f("ck_workflow_retention_policies_keep_days")),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_workflow_retention_policies")),
    )
    op.create_table(
        "workflow_retention_runs",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("trigger", sa.String(length=16), nullable=False),
        sa.Column("actor", sa.String(length=128), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column("rows_removed", sa.BigInteger(), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.CheckConstraint(
            "trigger IN ('scheduled', 'manual')", name=op.f("ck_workflow_retention_runs_trigger")
        ),
        sa.CheckConstraint(
            "status IN ('running', 'succeeded', 'failed')",
            name=op.f("ck_workflow_retention_runs_status"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_retention_runs")),
    )
    op.create_index(
        "ix_workflow_retention_runs_trigger",
        "workflow_retention_runs",
        ["trigger", "started_at"],
    )
    op.create_table(
        "workflow_retention_run_items",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("run_id", sa.BigInteger(), nullable=False),
        sa.Column("policy", sa.String(length=64), nullable=False),
        sa.Column("keep_days", sa.Integer(), nullable=False),
        sa.Column("cutoff", UTCDateTime(), nullable=False),
        sa.Column("rows_removed", sa.BigInteger(), nullable=False),
        sa.Column("batches", sa.Integer(), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("skipped", sa.String(length=64), nullable=True),
        sa.Column("detail", JsonType, nullable=True),
        sa.ForeignKeyConstraint(
            ["run_id"],
            ["workflow_retention_runs.id"],
            name=op.f("fk_workflow_retention_run_items_run_id_workflow_retention_runs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_retention_run_items")),
    )
    op.create_index(
        "ix_workflow_retention_run_items_run",
        "workflow_retention_run_items",
        ["run_id", "id"],
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_retention_run_items_run", table_name="workflow_retention_run_items")
    op.drop_table("workflow_retention_run_items")
    op.drop_index("ix_workflow_retention_runs_trigger", table_name="workflow_retention_runs")
    op.drop_table("workflow_retention_runs")
    op.drop_table("workflow_retention_policies")
    op.drop_index("ix_workflow_tasks_pending", table_name="workflow_tasks")
    op.drop_index("ix_workflow_tasks_finished", table_name="workflow_tasks")
    op.drop_index("ix_workflow_tasks_due", table_name="workflow_tasks")
    op.drop_index("ix_workflow_instances_finished", table_name="workflow_instances")
    op.drop_index("ix_workflow_instances_created", table_name="workflow_instances")
