"""Integrations and compensation (SPEC X-1, X-2, X-3, X-5, X-6, C-8): connectors
and their call audit, event subscriptions and hits, automation rules,
recorded external callbacks, compensation tickets and their history.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-29 12:16:20.847370
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from flowledger.db.types import UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "connector_calls",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("connector_id", sa.BigInteger(), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("connector_key", sa.String(length=64), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=True),
        sa.Column("instance_id", sa.BigInteger(), nullable=True),
        sa.Column("method", sa.String(length=16), nullable=False),
        sa.Column("path", sa.String(length=2048), nullable=False),
        sa.Column("status", sa.Integer(), nullable=True),
        sa.Column("outcome", sa.String(length=64), nullable=False),
        sa.Column("duration_ms", sa.Integer(), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_connector_calls")),
    )
    with op.batch_alter_table("connector_calls", schema=None) as batch_op:
        batch_op.create_index("ix_connector_calls_connector", ["connector_id", "id"], unique=False)
        batch_op.create_index("ix_connector_calls_created", ["created_at"], unique=False)

    op.create_table(
        "connectors",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("key", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("base_url", sa.String(length=2048), nullable=False),
        sa.Column("auth_kind", sa.String(length=16), nullable=False),
        sa.Column("auth_username", sa.String(length=255), nullable=True),
        sa.Column("auth_header_name", sa.String(length=128), nullable=True),
        sa.Column("secret_encrypted", sa.Text(), nullable=True),
        sa.Column("rate_limit_rps", sa.Float(), nullable=True),
        sa.Column("rate_limit_burst", sa.Integer(), nullable=True),
        sa.Column("breaker_failure_threshold", sa.Integer(), nullable=False),
        sa.Column("breaker_reset_timeout_s", sa.Float(), nullable=False),
        sa.Column(
            "default_headers",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "auth_kind IN ('none', 'bearer', 'basic', 'api_key', 'hmac')",
            name=op.f("ck_connectors_auth_kind"),
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_connectors")),
        sa.UniqueConstraint("tenant_id", "key", name=op.f("uq_connectors_tenant_id_key")),
        sqlite_autoincrement=True,
    )
    with op.batch_alter_table("connectors", schema=None) as batch_op:
        batch_op.create_index("ix_connectors_tenant", ["tenant_id", "id"], unique=False)

    op.create_table(
        "workflow_automation_rules",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column(
            "event_types",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("definition_key", sa.String(length=64), nullable=True),
        sa.Column("condition", sa.Text(), nullable=True),
        sa.Column(
            "actions",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_automation_rules")),
    )
    with op.batch_alter_table("workflow_automation_rules", schema=None) as batch_op:
        batch_op.create_index(
            "ix_workflow_automation_rules_tenant_enabled",
            ["tenant_id", "enabled", "id"],
            unique=False,
        )

    op.create_table(
        "workflow_callbacks",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("subject_id", sa.BigInteger(), nullable=False),
        sa.Column("instance_id", sa.BigInteger(), nullable=False),
        sa.Column("task_id", sa.BigInteger(), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("source", sa.String(length=32), nullable=False),
        sa.Column("decided_by", sa.String(length=128), nullable=True),
        sa.Column("comment", sa.Text(), nullable=True),
        sa.Column(
            "body",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("received_at", UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "kind IN ('external', 'trigger')", name=op.f("ck_workflow_callbacks_kind")
        ),
        sa.CheckConstraint(
            "outcome IN ('approve', 'reject', 'succeeded', 'failed')",
            name=op.f("ck_workflow_callbacks_outcome"),
        ),
        sa.CheckConstraint(
            "source IN ('callback', 'dispatch_fallback')", name=op.f("ck_workflow_callbacks_source")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_callbacks")),
        sa.UniqueConstraint(
            "kind", "subject_id", name=op.f("uq_workflow_callbacks_kind_subject_id")
        ),
    )
    with op.batch_alter_table("workflow_callbacks", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_callbacks_instance", ["instance_id"], unique=False)

    op.create_table(
        "workflow_event_subscriptions",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column(
            "event_types",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("definition_key", sa.String(length=64), nullable=True),
        sa.Column("target_url", sa.String(length=2048), nullable=False),
        sa.Column("secret_encrypted", sa.Text(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("deleted_at", UTCDateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_event_subscriptions")),
    )
    with op.batch_alter_table("workflow_event_subscriptions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_workflow_event_subscriptions_tenant", ["tenant_id", "enabled", "id"], unique=False
        )

    op.create_table(
        "workflow_subscription_hits",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("subscription_id", sa.BigInteger(), nullable=False),
        sa.Column("event_id", sa.BigInteger(), nullable=False),
        sa.Column("event_type", sa.String(length=64), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.BigInteger(), nullable=True),
        sa.Column("job_id", sa.BigInteger(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("response_status", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'delivered', 'failed', 'skipped')",
            name=op.f("ck_workflow_subscription_hits_status"),
        ),
        sa.ForeignKeyConstraint(
            ["subscription_id"],
            ["workflow_event_subscriptions.id"],
            name=op.f("fk_workflow_subscription_hits_subscription_id_workflow_event_subscriptions"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_subscription_hits")),
        sa.UniqueConstraint(
            "subscription_id",
            "event_id",
            name=op.f("uq_workflow_subscription_hits_subscription_id_event_id"),
        ),
    )
    with op.batch_alter_table("workflow_subscription_hits", schema=None) as batch_op:
        batch_op.create_index(
            "ix_workflow_subscription_hits_instance", ["instance_id"], unique=False
        )

    op.create_table(
        "workflow_compensations",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("instance_id", sa.Integer(), nullable=False),
        sa.Column("failed_node_key", sa.String(length=128), nullable=False),
        sa.Column("node_key", sa.String(length=128), nullable=False),
        sa.Column("kind", sa.String(length=32), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("compensation_action_status", sa.String(length=16), nullable=False),
        sa.Column(
            "action_payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("repair_task_id", sa.BigInteger(), nullable=True),
        sa.Column("action_job_id", sa.BigInteger(), nullable=True),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("resolved_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("resolved_by", sa.String(length=128), nullable=True),
        sa.CheckConstraint(
            "compensation_action_status IN ('none', 'pending', 'running', 'succeeded', 'failed')",
            name=op.f("ck_workflow_compensations_action_status"),
        ),
        sa.CheckConstraint(
            "status IN ('pending', 'resolved', 'terminated')",
            name=op.f("ck_workflow_compensations_status"),
        ),
        sa.ForeignKeyConstraint(
            ["instance_id"],
            ["workflow_instances.id"],
            name=op.f("fk_workflow_compensations_instance_id_workflow_instances"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_compensations")),
        sa.UniqueConstraint(
            "idempotency_key", name=op.f("uq_workflow_compensations_idempotency_key")
        ),
    )
    with op.batch_alter_table("workflow_compensations", schema=None) as batch_op:
        batch_op.create_index(
            "ix_workflow_compensations_instance", ["instance_id", "id"], unique=False
        )
        batch_op.create_index(
            "ix_workflow_compensations_repair_task", ["repair_task_id"], unique=False
        )
        batch_op.create_index("ix_workflow_compensations_status", ["status", "id"], unique=False)
        batch_op.create_index(
            "ix_workflow_compensations_tenant_status", ["tenant_id", "status", "id"], unique=False
        )

    op.create_table(
        "workflow_compensation_logs",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("compensation_id", sa.BigInteger(), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("actor", sa.String(length=128), nullable=False),
        sa.Column("message", sa.Text(), nullable=True),
        sa.Column(
            "detail",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("stored_name", sa.String(length=128), nullable=True),
        sa.Column("original_name", sa.String(length=255), nullable=True),
        sa.Column("content_type", sa.String(length=128), nullable=True),
        sa.Column("size_bytes", sa.BigInteger(), nullable=True),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "kind IN ('created', 'note', 'attachment', 'action_result', 'retry', 'resume', 'release', 'resolve', 'terminate')",
            name=op.f("ck_workflow_compensation_logs_kind"),
        ),
        sa.ForeignKeyConstraint(
            ["compensation_id"],
            ["workflow_compensations.id"],
            name=op.f("fk_workflow_compensation_logs_compensation_id_workflow_compensations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_compensation_logs")),
    )
    with op.batch_alter_table("workflow_compensation_logs", schema=None) as batch_op:
        batch_op.create_index(
            "ix_workflow_compensation_logs_compensation", ["compensation_id", "id"], unique=False
        )


def downgrade() -> None:
    with op.batch_alter_table("workflow_compensation_logs", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_compensation_logs_compensation")

    op.drop_table("workflow_compensation_logs")
    with op.batch_alter_table("workflow_compensations", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_compensations_tenant_status")
        batch_op.drop_index("ix_workflow_compensations_status")
        batch_op.drop_index("ix_workflow_compensations_repair_task")
        batch_op.drop_index("ix_workflow_compensations_instance")

    op.drop_table("workflow_compensations")
    with op.batch_alter_table("workflow_subscription_hits", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_subscription_hits_instance")

    op.drop_table("workflow_subscription_hits")
    with op.batch_alter_table("workflow_event_subscriptions", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_event_subscriptions_tenant")

    op.drop_table("workflow_event_subscriptions")
    with op.batch_alter_table("workflow_callbacks", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_callbacks_instance")

    op.drop_table("workflow_callbacks")
    with op.batch_alter_table("workflow_automation_rules", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_automation_rules_tenant_enabled")

    op.drop_table("workflow_automation_rules")
    with op.batch_alter_table("connectors", schema=None) as batch_op:
        batch_op.drop_index("ix_connectors_tenant")

    op.drop_table("connectors")
    with op.batch_alter_table("connector_calls", schema=None) as batch_op:
        batch_op.drop_index("ix_connector_calls_created")
        batch_op.drop_index("ix_connector_calls_connector")

    op.drop_table("connector_calls")
