"""Instance migrations (issue 30): ``workflow_migrations`` (a saved, named
plan moving running instances of one definition to another version, with
its mapping, field values, reason and counts) and
``workflow_migration_items`` (its result per instance). Both backends.

Revision ID: 0017
Revises: 0016
Create Date: 2026-12-06 03:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from flowledger.db.types import JsonType, UTCDateTime

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None

_ID = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "workflow_migrations",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("tenant_id", sa.String(length=64), nullable=False),
        sa.Column("name", sa.String(length=255), nullable=False),
        sa.Column("definition_key", sa.String(length=64), nullable=False),
        sa.Column("from_versions", JsonType, nullable=False),
        sa.Column("to_version", sa.Integer(), nullable=False),
        sa.Column("selection", JsonType, nullable=False),
        sa.Column("mapping", JsonType, nullable=False),
        sa.Column("field_values", JsonType, nullable=False),
        sa.Column("reason", sa.Text(), nullable=False),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("counts", JsonType, nullable=False),
        sa.Column("created_by", sa.String(length=128), nullable=False),
        sa.Column("created_at", UTCDateTime(), nullable=False),
        sa.Column("started_at", UTCDateTime(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=True),
        sa.CheckConstraint(
            "status IN ('draft', 'running', 'done')", name=op.f("ck_workflow_migrations_status")
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_migrations")),
    )
    op.create_index(
        "ix_workflow_migrations_definition",
        "workflow_migrations",
        ["definition_key", "created_at"],
    )
    op.create_table(
        "workflow_migration_items",
        sa.Column("id", _ID, autoincrement=True, nullable=False),
        sa.Column("migration_id", sa.BigInteger(), nullable=False),
        sa.Column("instance_id", sa.BigInteger(), nullable=False),
        sa.Column("verdict", sa.String(length=16), nullable=False),
        sa.Column("outcome", sa.String(length=16), nullable=False),
        sa.Column("result", JsonType, nullable=False),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("finished_at", UTCDateTime(), nullable=False),
        sa.CheckConstraint(
            "outcome IN ('migrated', 'blocked', 'failed')",
            name=op.f("ck_workflow_migration_items_outcome"),
        ),
        sa.ForeignKeyConstraint(
            ["migration_id"],
            ["workflow_migrations.id"],
            name=op.f("fk_workflow_migration_items_migration_id_workflow_migrations"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_workflow_migration_items")),
    )
    op.create_index(
        "ix_workflow_migration_items_migration",
        "workflow_migration_items",
        ["migration_id", "instance_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_migration_items_migration", "workflow_migration_items")
    op.drop_table("workflow_migration_items")
    op.drop_index("ix_workflow_migrations_definition", "workflow_migrations")
    op.drop_table("workflow_migrations")
