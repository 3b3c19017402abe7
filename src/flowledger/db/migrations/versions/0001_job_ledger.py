"""The job ledger (SPEC L-1), the worker registry (L-21) and leader leases.

Revision ID: 0001
Revises:
Create Date: 2026-11-29 08:44:47.497652
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

from flowledger.db.types import UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "system_leader_leases",
        sa.Column("name", sa.String(length=64), nullable=False),
        sa.Column("holder", sa.String(length=128), nullable=False),
        sa.Column("lease_until", UTCDateTime(), nullable=False),
        sa.PrimaryKeyConstraint("name", name=op.f("pk_system_leader_leases")),
    )
    op.create_table(
        "system_scheduler_nodes",
        sa.Column("id", sa.String(length=128), nullable=False),
        sa.Column("hostname", sa.String(length=255), nullable=False),
        sa.Column("pid", sa.Integer(), nullable=False),
        sa.Column(
            "roles",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column(
            "pools",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("slots_capacity", sa.Integer(), nullable=False),
        sa.Column("slots_in_use", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("heartbeat_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "status IN ('active', 'stopped')", name=op.f("ck_system_scheduler_nodes_status")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_system_scheduler_nodes")),
    )
    with op.batch_alter_table("system_scheduler_nodes", schema=None) as batch_op:
        batch_op.create_index("ix_system_scheduler_nodes_heartbeat", ["heartbeat_at"], unique=False)

    op.create_table(
        "workflow_jobs",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("type", sa.String(length=64), nullable=False),
        sa.Column("pool", sa.String(length=64), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column(
            "payload",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=False,
        ),
        sa.Column("tenant_id", sa.String(length=64), nullable=True),
        sa.Column("instance_id", sa.BigInteger(), nullable=True),
        sa.Column("task_id", sa.BigInteger(), nullable=True),
        sa.Column("node_key", sa.String(length=128), nullable=True),
        sa.Column("priority", sa.Integer(), nullable=False),
        sa.Column("run_at", UTCDateTime(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("max_attempts", sa.Integer(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("lease_token", sa.String(length=36), nullable=True),
        sa.Column("lease_owner", sa.String(length=128), nullable=True),
        sa.Column("lease_until", UTCDateTime(), nullable=True),
        sa.Column("execution_timeout_ms", sa.Integer(), nullable=False),
        sa.Column("execution_deadline", UTCDateTime(), nullable=True),
        sa.Column("paused_remaining_ms", sa.BigInteger(), nullable=True),
        sa.Column("side_effect_at", UTCDateTime(), nullable=True),
        sa.Column("operation_key", sa.String(length=128), nullable=False),
        sa.Column("trace_id", sa.String(length=64), nullable=False),
        sa.Column("idempotency_key", sa.String(length=255), nullable=True),
        sa.Column(
            "result",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("last_error_code", sa.String(length=64), nullable=True),
        sa.Column("cancel_reason", sa.Text(), nullable=True),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("updated_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "status IN ('pending', 'running', 'paused', 'succeeded', 'failed', 'dead', 'canceled')",
            name=op.f("ck_workflow_jobs_status"),
        ),
        sa.CheckConstraint(
            "attempts >= 0 AND max_attempts >= 1", name=op.f("ck_workflow_jobs_attempts")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_jobs")),
        sa.UniqueConstraint("idempotency_key", name=op.f("uq_workflow_jobs_idempotency_key")),
    )
    with op.batch_alter_table("workflow_jobs", schema=None) as batch_op:
        batch_op.create_index(
            "ix_workflow_jobs_claim_due",
            ["pool", "run_at", "id"],
            unique=False,
            postgresql_where=sa.text("status = 'pending'"),
            sqlite_where=sa.text("status = 'pending'"),
        )
        batch_op.create_index(
            "ix_workflow_jobs_claim_priority",
            ["pool", "priority", "run_at", "id"],
            unique=False,
            postgresql_where=sa.text("status = 'pending'"),
            sqlite_where=sa.text("status = 'pending'"),
        )
        batch_op.create_index("ix_workflow_jobs_instance", ["instance_id", "status"], unique=False)
        batch_op.create_index(
            "ix_workflow_jobs_running_lease",
            ["lease_until"],
            unique=False,
            postgresql_where=sa.text("status = 'running'"),
            sqlite_where=sa.text("status = 'running'"),
        )
        batch_op.create_index("ix_workflow_jobs_status_type", ["status", "type"], unique=False)
        batch_op.create_index("ix_workflow_jobs_trace", ["trace_id"], unique=False)

    op.create_table(
        "workflow_job_effects",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("operation_key", sa.String(length=128), nullable=False),
        sa.Column("step_key", sa.String(length=128), nullable=False),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column(
            "result",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["workflow_jobs.id"],
            name=op.f("fk_workflow_job_effects_job_id_workflow_jobs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_job_effects")),
        sa.UniqueConstraint(
            "operation_key", "step_key", name=op.f("uq_workflow_job_effects_operation_key_step_key")
        ),
    )
    with op.batch_alter_table("workflow_job_effects", schema=None) as batch_op:
        batch_op.create_index("ix_workflow_job_effects_job", ["job_id"], unique=False)

    op.create_table(
        "workflow_job_executions",
        sa.Column(
            "id",
            sa.BigInteger().with_variant(sa.Integer(), "sqlite"),
            autoincrement=True,
            nullable=False,
        ),
        sa.Column("job_id", sa.BigInteger(), nullable=False),
        sa.Column("generation", sa.Integer(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("node_id", sa.String(length=128), nullable=True),
        sa.Column("scheduled_at", UTCDateTime(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=False),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.Column("duration_ms", sa.Integer(), nullable=True),
        sa.Column(
            "request",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column(
            "response",
            sa.JSON().with_variant(postgresql.JSONB(astext_type=sa.Text()), "postgresql"),
            nullable=True,
        ),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("error_code", sa.String(length=64), nullable=True),
        sa.Column("side_effect_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "status IN ('running', 'succeeded', 'failed', 'skipped', 'canceled')",
            name=op.f("ck_workflow_job_executions_status"),
        ),
        sa.ForeignKeyConstraint(
            ["job_id"],
            ["workflow_jobs.id"],
            name=op.f("fk_workflow_job_executions_job_id_workflow_jobs"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_job_executions")),
    )
    with op.batch_alter_table("workflow_job_executions", schema=None) as batch_op:
        batch_op.create_index(
            "ix_workflow_job_executions_job", ["job_id", "generation", "attempt"], unique=False
        )
        batch_op.create_index("ix_workflow_job_executions_started", ["started_at"], unique=False)


def downgrade() -> None:
    with op.batch_alter_table("workflow_job_executions", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_job_executions_started")
        batch_op.drop_index("ix_workflow_job_executions_job")

    op.drop_table("workflow_job_executions")
    with op.batch_alter_table("workflow_job_effects", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_job_effects_job")

    op.drop_table("workflow_job_effects")
    with op.batch_alter_table("workflow_jobs", schema=None) as batch_op:
        batch_op.drop_index("ix_workflow_jobs_trace")
        batch_op.drop_index("ix_workflow_jobs_status_type")
        batch_op.drop_index(
            "ix_workflow_jobs_running_lease",
            postgresql_where=sa.text("status = 'running'"),
            sqlite_where=sa.text("status = 'running'"),
        )
        batch_op.drop_index("ix_workflow_jobs_instance")
        batch_op.drop_index(
            "ix_workflow_jobs_claim_priority",
            postgresql_where=sa.text("status = 'pending'"),
            sqlite_where=sa.text("status = 'pending'"),
        )
        batch_op.drop_index(
            "ix_workflow_jobs_claim_due",
            postgresql_where=sa.text("status = 'pending'"),
            sqlite_where=sa.text("status = 'pending'"),
        )

    op.drop_table("workflow_jobs")
    with op.batch_alter_table("system_scheduler_nodes", schema=None) as batch_op:
        batch_op.drop_index("ix_system_scheduler_nodes_heartbeat")

    op.drop_table("system_scheduler_nodes")
    op.drop_table("system_leader_leases")
