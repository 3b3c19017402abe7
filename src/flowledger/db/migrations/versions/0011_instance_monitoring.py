"""Instance monitoring (SPEC O-1, O-2, O-5): saved views, the remind (催办)
rate-limit state of tasks, and the indexes serving every filter and sort of
the instance list on PostgreSQL (pg_trgm for the form keyword).

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 11:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from flowledger.db.types import UTCDateTime

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_INDEXES = [  # (name, table, columns)
    (
        "ix_workflow_instances_tenant_created",
        "workflow_instances",
        ["tenant_id", "created_at", "id"],
    ),
    ("ix_workflow_instances_created_id", "workflow_instances", ["created_at", "id"]),
    ("ix_workflow_instances_updated", "workflow_instances", ["updated_at", "id"]),
    ("ix_workflow_instances_finished_id", "workflow_instances", ["finished_at", "id"]),
    ("ix_workflow_instances_status_updated", "workflow_instances", ["status", "updated_at", "id"]),
    ("ix_workflow_trace_created", "workflow_trace", ["created_at", "instance_id"]),
    (
        "ix_workflow_instances_definition_version",
        "workflow_instances",
        ["definition_key", "definition_version", "created_at"],
    ),
    ("ix_workflow_instances_trace", "workflow_instances", ["trace_id"]),
    ("ix_workflow_tokens_node_state", "workflow_tokens", ["node_key", "state", "instance_id"]),
]


def upgrade() -> None:
    op.create_table(
        "workflow_saved_views",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("owner", sa.String(length=128), nullable=False),
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column(
            "filters",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("shared", sa.Boolean(), nullable=False),
        sa.Column("is_default", sa.Boolean(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "scope IN ('instances', 'jobs', 'tasks', 'health')",
            name=op.f("ck_workflow_saved_views_scope"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_saved_views")),
    )
    op.create_index(
        "ix_workflow_saved_views_owner", "workflow_saved_views", ["owner", "scope", "id"]
    )
    op.create_index(
        "ix_workflow_saved_views_shared", "workflow_saved_views", ["tenant_id", "scope", "shared"]
    )
    op.create_index(
        "uq_workflow_saved_views_default",
        "workflow_saved_views",
        ["owner", "scope"],
        unique=True,
        postgresql_where=sa.text("is_default"),
        sqlite_where=sa.text("is_default"),
    )
    op.create_table(
        "workflow_task_reminders",
        sa.Column("task_id", sa.Integer(), autoincrement=False, nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("last_reminded_by", sa.String(length=128), nullable=False),
        sa.Column("last_reminded_at", UTCDateTime(), nullable=False),
        sa.Column("reminders", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("task_id", name=op.f("pk_workflow_task_reminders")),
    )
    with op.batch_alter_table("workflow_form_writes") as batch_op:
        batch_op.add_column(sa.Column("reason", sa.Text(), nullable=True))
    for name, table, columns in _INDEXES:
        op.create_index(name, table, columns)
    op.create_index(
        "ix_workflow_instances_has_error",
        "workflow_instances",
        ["created_at"],
        postgresql_where=sa.text("error IS NOT NULL"),
        sqlite_where=sa.text("error IS NOT NULL"),
    )
    if op.get_bind().dialect.name == "postgresql":
        op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
        op.execute(
            "CREATE INDEX ix_workflow_instances_form_trgm ON workflow_instances "
            "USING gin (CAST(form_data AS TEXT) gin_trgm_ops)"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP INDEX IF EXISTS ix_workflow_instances_form_trgm")
    op.drop_index("ix_workflow_instances_has_error", table_name="workflow_instances")
    for name, table, _columns in reversed(_INDEXES):
        op.drop_index(name, table_name=table)
    with op.batch_alter_table("workflow_form_writes") as batch_op:
        batch_op.drop_column("reason")
    op.drop_table("workflow_task_reminders")
    op.drop_index("uq_workflow_saved_views_default", table_name="workflow_saved_views")
    op.drop_index("ix_workflow_saved_views_shared", table_name="workflow_saved_views")
    op.drop_index("ix_workflow_saved_views_owner", table_name="workflow_saved_views")
    op.drop_table("workflow_saved_views")
