"""Alerting (SPEC O-22): ``workflow_alert_rules`` (rules with their
evaluation state), ``workflow_alert_events`` (firing / resolved
transitions, UNIQUE per rule, episode and kind) and
``workflow_alert_silences``.

Revision ID: 0008
Revises: 0007_task_runs
Create Date: 2026-12-01 11:30:00
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from flowledger.db.types import UTCDateTime

revision = "0008"
down_revision = "0007_task_runs"
branch_labels = None
depends_on = None


def _json() -> sa.types.TypeEngine[Any]:
    return sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql")


def _id() -> sa.Column[int]:
    return sa.Column(
        "id",
        sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
        autoincrement=True,
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "workflow_alert_rules",
        _id(),
        sa.Column("tenant_id", sa.String(length=64), nullable=True),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("metric", sa.String(length=64), nullable=False),
        sa.Column("comparison", sa.String(length=8), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("for_seconds", sa.Integer(), nullable=False),
        sa.Column("severity", sa.String(length=16), nullable=False),
        sa.Column("email_to", _json(), nullable=False),
        sa.Column("webhook_url", sa.String(length=2048), nullable=True),
        sa.Column("webhook_secret_encrypted", sa.Text(), nullable=True),
        sa.Column("in_app_users", _json(), nullable=False),
        sa.Column("enabled", sa.Boolean(), nullable=False),
        sa.Column("state", sa.String(length=16), nullable=False),
        sa.Column("state_since", UTCDateTime(timezone=True), nullable=True),
        sa.Column("episode", sa.Integer(), nullable=False),
        sa.Column("notified", sa.String(length=16), nullable=True),
        sa.Column("last_event_id", sa.BigInteger(), nullable=True),
        sa.Column("last_value", sa.Float(), nullable=True),
        sa.Column("evaluated_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("updated_at", UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "comparison IN ('gt', 'gte', 'lt', 'lte')",
            name=op.f("ck_workflow_alert_rules_comparison"),
        ),
        sa.CheckConstraint(
            "severity IN ('info', 'warning', 'critical')",
            name=op.f("ck_workflow_alert_rules_severity"),
        ),
        sa.CheckConstraint(
            "state IN ('ok', 'pending', 'firing', 'resolved')",
            name=op.f("ck_workflow_alert_rules_state"),
        ),
        sa.CheckConstraint("for_seconds >= 0", name=op.f("ck_workflow_alert_rules_for_seconds")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_alert_rules")),
    )
    with op.batch_alter_table("workflow_alert_rules", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_alert_rules_tenant", ["tenant_id", "id"], unique=False)
        batch_op.create_index("ix_workflow_alert_rules_enabled", ["enabled", "id"], unique=False)

    op.create_table(
        "workflow_alert_events",
        _id(),
        sa.Column("rule_id", sa.BigInteger(), nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=True),
        sa.Column("rule_name", sa.String(length=255), nullable=False),
        sa.Column("metric", sa.String(length=64), nullable=False),
        sa.Column("kind", sa.String(length=16), nullable=False),
        sa.Column("episode", sa.Integer(), nullable=False),
        sa.Column("value", sa.Float(), nullable=True),
        sa.Column("comparison", sa.String(length=8), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("severity", sa.String(length=16), nullable=False),
        sa.Column("silenced", sa.Boolean(), nullable=False),
        sa.Column("silence_id", sa.BigInteger(), nullable=True),
        sa.Column("notified_at", UTCDateTime(timezone=True), nullable=True),
        sa.Column("notification_jobs", _json(), nullable=False),
        sa.Column("occurred_at", UTCDateTime(timezone=True), nullable=False),
        sa.CheckConstraint(
            "kind IN ('firing', 'resolved')", name=op.f("ck_workflow_alert_events_kind")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_alert_events")),
        sa.UniqueConstraint(
            "rule_id", "episode", "kind", name=op.f("uq_workflow_alert_events_rule_id_episode_kind")
        ),
    )
    with op.batch_alter_table("workflow_alert_events", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_alert_events_tenant", ["tenant_id", "id"], unique=False)
        batch_op.create_index("ix_workflow_alert_events_rule", ["rule_id", "id"], unique=False)

    op.create_table(
        "workflow_alert_silences",
        _id(),
        sa.Column("tenant_id", sa.String(length=64), nullable=True),
        sa.Column("rule_id", sa.BigInteger(), nullable=True),
        sa.Column("metric", sa.String(length=64), nullable=True),
        sa.Column("starts_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("ends_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("comment", sa.Text(), nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", UTCDateTime(timezone=True), nullable=False),
        sa.Column("expired_at", UTCDateTime(timezone=True), nullable=True),
        sa.CheckConstraint("ends_at >= starts_at", name=op.f("ck_workflow_alert_silences_window")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_alert_silences")),
    )
    with op.batch_alter_table("workflow_alert_silences", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_alert_silences_ends", ["ends_at"], unique=False)
        batch_op.create_index(
            "ix_workflow_alert_silences_tenant", ["tenant_id", "id"], unique=False
        )


def downgrade() -> None:
    op.drop_table("workflow_alert_silences")
    op.drop_table("workflow_alert_events")
    op.drop_table("workflow_alert_rules")
