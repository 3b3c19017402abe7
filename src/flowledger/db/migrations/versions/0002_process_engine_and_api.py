"""The process engine (SPEC E-1..E-10) and the API (A-2, A-3): definitions, instances, tokens, tasks, trace, outbox, schedules, users, tokens, audit.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29 09:11:27.072120
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from flowledger.db.types import UTCDateTime

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "operation_audit",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("actor", sa.String(length=128), nullable=False),
        sa.Column("action", sa.String(length=64), nullable=False),
        sa.Column("target_type", sa.String(length=32), nullable=False),
        sa.Column("target_id", sa.String(length=64), nullable=True),
        sa.Column("tenant_id", sa.String(length=64), nullable=True),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column(
            "detail",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("result", sa.String(length=16), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_operation_audit")),
    )
    with op.batch_alter_table("operation_audit", schema=None) as batch_op:
        batch_op.create_index("ix_operation_audit_created", ["created_at"], unique=False)
        batch_op.create_index(
            "ix_operation_audit_target", ["target_type", "target_id"], unique=False
        )

    op.create_table(
        "users",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("display_name", sa.String(length=255), nullable=False),
        sa.Column(
            "roles",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "permissions",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "tenants",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_users")),
    )
    op.create_table(
        "workflow_definitions",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column(
            "source",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("deployed_by", sa.String(length=128), nullable=False),
        sa.Column("deployed_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_definitions")),
        sa.UniqueConstraint(
            "tenant_id",
            "key",
            "version",
            name=op.f("uq_workflow_definitions_tenant_id_key_version"),
        ),
    )
    op.create_table(
        "workflow_event_outbox",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.Integer(), nullable=True),
        sa.Column("definition_key", sa.String(length=64), nullable=True),
        sa.Column("event_type", sa.String(length=64), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("trace_id", sa.String(length=64), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("dispatched_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'dispatched', 'failed')",
            name=op.f("ck_workflow_event_outbox_status"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_event_outbox")),
    )
    with op.batch_alter_table("workflow_event_outbox", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_event_outbox_instance", ["instance_id"], unique=False)
        batch_op.create_index(
            "ix_workflow_event_outbox_status", ["status", "created_at"], unique=False
        )

    op.create_table(
        "workflow_schedules",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("definition_key", sa.String(length=64), nullable=False),
        sa.Column("cron", sa.String(length=128), nullable=False),
        sa.Column("timezone", sa.String(length=64), nullable=False),
        sa.Column(
            "form",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("initiator", sa.String(length=128), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("next_run_at", UTCDateTime(), nullable=True),
        sa.Column("last_run_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_schedules")),
    )
    with op.batch_alter_table("workflow_schedules", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_schedules_due", ["enabled", "next_run_at"], unique=False)

    op.create_table(
        "workflow_trace",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("instance_id", sa.Integer(), nullable=False),
        sa.Column("trace_id", sa.String(length=64), nullable=False),
        sa.Column("event", sa.String(length=48), nullable=False),
        sa.Column("node_key", sa.String(length=128), nullable=True),
        sa.Column("token_id", sa.Integer(), nullable=True),
        sa.Column("task_id", sa.Integer(), nullable=True),
        sa.Column("job_id", sa.Integer(), nullable=True),
        sa.Column(
            "detail",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_trace")),
    )
    with op.batch_alter_table("workflow_trace", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_trace_instance", ["instance_id", "id"], unique=False)
        batch_op.create_index("ix_workflow_trace_trace", ["trace_id"], unique=False)

    op.create_table(
        "api_tokens",
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("user_id", sa.String(length=128), nullable=False),
        sa.Column(
            "permissions",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "tenants",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("revoked_at", UTCDateTime(), nullable=True),
        sa.ForeignKeyConstraint(
            ["user_id"], ["users.id"], name=op.f("fk_api_tokens_user_id_users"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("token_hash", name=op.f("pk_api_tokens")),
    )
    op.create_table(
        "workflow_instances",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("definition_id", sa.Integer(), nullable=False),
        sa.Column("definition_key", sa.String(length=64), nullable=False),
        sa.Column("definition_version", sa.Integer(), nullable=False),
        sa.Column(
            "snapshot",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column(
            "form_data",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("initiator", sa.String(length=128), nullable=False),
        sa.Column("parent_instance_id", sa.Integer(), nullable=True),
        sa.Column("parent_task_id", sa.Integer(), nullable=True),
        sa.Column("trace_id", sa.String(length=64), nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "status IN ('running', 'suspended', 'approved', 'rejected', 'withdrawn', 'canceled')",
            name=op.f("ck_workflow_instances_status"),
        ),
        sa.ForeignKeyConstraint(
            ["definition_id"],
            ["workflow_definitions.id"],
            name=op.f("fk_workflow_instances_definition_id_workflow_definitions"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_instances")),
    )
    with op.batch_alter_table("workflow_instances", schema=None) as batch_op:
        batch_op.create_index(
            "ix_workflow_instances_definition", ["definition_key", "status"], unique=False
        )
        batch_op.create_index(
            "ix_workflow_instances_initiator", ["initiator", "status"], unique=False
        )
        batch_op.create_index("ix_workflow_instances_parent", ["parent_instance_id"], unique=False)
        batch_op.create_index(
            "ix_workflow_instances_tenant_status",
            ["tenant_id", "status", "created_at"],
            unique=False,
        )

    op.create_table(
        "workflow_comments",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("instance_id", sa.Integer(), nullable=False),
        sa.Column("task_id", sa.Integer(), nullable=True),
        sa.Column("author", sa.String(length=128), nullable=False),
        sa.Column("body", sa.Text(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["workflow_instances.id"],
            name=op.f("fk_workflow_comments_instance_id_workflow_instances"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_comments")),
    )
    with op.batch_alter_table("workflow_comments", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_comments_instance", ["instance_id"], unique=False)

    op.create_table(
        "workflow_forks",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("instance_id", sa.Integer(), nullable=False),
        sa.Column("node_key", sa.String(length=128), nullable=False),
        sa.Column("gateway", sa.String(length=16), nullable=False),
        sa.Column("expected", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["workflow_instances.id"],
            name=op.f("fk_workflow_forks_instance_id_workflow_instances"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_forks")),
    )
    with op.batch_alter_table("workflow_forks", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_forks_instance", ["instance_id"], unique=False)

    op.create_table(
        "workflow_form_writes",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("instance_id", sa.Integer(), nullable=False),
        sa.Column("written_by", sa.String(length=128), nullable=False),
        sa.Column("source", sa.String(length=64), nullable=False),
        sa.Column(
            "changes",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["workflow_instances.id"],
            name=op.f("fk_workflow_form_writes_instance_id_workflow_instances"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_form_writes")),
    )
    with op.batch_alter_table("workflow_form_writes", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_form_writes_instance", ["instance_id"], unique=False)

    op.create_table(
        "workflow_tasks",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("instance_id", sa.Integer(), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("node_key", sa.String(length=128), nullable=False),
        sa.Column("token_id", sa.Integer(), nullable=True),
        sa.Column("kind", sa.String(length=24), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("assignee", sa.String(length=128), nullable=False),
        sa.Column("action", sa.String(length=16), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column("due_at", UTCDateTime(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("finished_by", sa.String(length=128), nullable=True),
        sa.CheckConstraint(
            "status IN ('pending', 'waiting', 'completed', 'skipped', 'canceled', 'cc')",
            name=op.f("ck_workflow_tasks_status"),
        ),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["workflow_instances.id"],
            name=op.f("fk_workflow_tasks_instance_id_workflow_instances"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_tasks")),
    )
    with op.batch_alter_table("workflow_tasks", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_tasks_assignee", ["assignee", "status"], unique=False)
        batch_op.create_index("ix_workflow_tasks_instance", ["instance_id", "status"], unique=False)
        batch_op.create_index(
            "ix_workflow_tasks_tenant_status", ["tenant_id", "status", "created_at"], unique=False
        )

    op.create_table(
        "workflow_tokens",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("instance_id", sa.Integer(), nullable=False),
        sa.Column("node_key", sa.String(length=128), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column(
            "fork_stack",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("consumed_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "state IN ('active', 'parked', 'consumed')", name=op.f("ck_workflow_tokens_state")
        ),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["workflow_instances.id"],
            name=op.f("fk_workflow_tokens_instance_id_workflow_instances"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_tokens")),
    )
    with op.batch_alter_table("workflow_tokens", schema=None) as batch_op:
        batch_op.create_index(
            "ix_workflow_tokens_instance_state", ["instance_id", "state"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("workflow_tokens", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_tokens_instance_state")

    op.drop_table("workflow_tokens")
    with op.batch_alter_table("workflow_tasks", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_tasks_tenant_status")
        batch_op.drop_index("ix_workflow_tasks_instance")
        batch_op.drop_index("ix_workflow_tasks_assignee")

    op.drop_table("workflow_tasks")
    with op.batch_alter_table("workflow_form_writes", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_form_writes_instance")

    op.drop_table("workflow_form_writes")
    with op.batch_alter_table("workflow_forks", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_forks_instance")

    op.drop_table("workflow_forks")
    with op.batch_alter_table("workflow_comments", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_comments_instance")

    op.drop_table("workflow_comments")
    with op.batch_alter_table("workflow_instances", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_instances_tenant_status")
        batch_op.drop_index("ix_workflow_instances_parent")
        batch_op.drop_index("ix_workflow_instances_initiator")
        batch_op.drop_index("ix_workflow_instances_definition")

    op.drop_table("workflow_instances")
    op.drop_table("api_tokens")
    with op.batch_alter_table("workflow_trace", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_trace_trace")
        batch_op.drop_index("ix_workflow_trace_instance")

    op.drop_table("workflow_trace")
    with op.batch_alter_table("workflow_schedules", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_schedules_due")

    op.drop_table("workflow_schedules")
    with op.batch_alter_table("workflow_event_outbox", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_event_outbox_status")
        batch_op.drop_index("ix_workflow_event_outbox_instance")

    op.drop_table("workflow_event_outbox")
    op.drop_table("workflow_definitions")
    op.drop_table("users")
    with op.batch_alter_table("operation_audit", schema=None) as batch_op:
        batch_op.drop_index("ix_operation_audit_target")
        batch_op.drop_index("ix_operation_audit_created")

    op.drop_table("operation_audit")
