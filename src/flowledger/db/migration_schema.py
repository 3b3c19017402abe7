"""The declared schema of instance migrations (issue 30): a saved, named
migration plan between two versions of one definition, and its result per
instance. Table and index definitions only; they share
:data:`flowledger.db.schema.metadata`.

- ``workflow_migrations`` — one row per plan: definition key, source
  versions, target version, the instance selection (explicit ids or an
  instance-list filter), the node mapping, the values for new required form
  fields, reason, who created it, status (``draft`` / ``running`` /
  ``done``) and the counts by outcome.
- ``workflow_migration_items`` — one row per (plan, instance) of a run: the
  verdict (``ok`` / ``changed`` / ``blocked``), the outcome (``migrated``,
  ``blocked``, ``failed``), and the per-instance result document (the same
  document the dry run gives).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    ForeignKey,
    Index,
    Integer,
    String,
    Table,
    Text,
)

from flowledger.db.schema import in_values, metadata
from flowledger.db.types import BigId, JsonType, UTCDateTime

MIGRATION_STATUSES = ["draft", "running", "done"]
ITEM_OUTCOMES = ["migrated", "blocked", "failed"]

workflow_migrations = Table(
    "workflow_migrations",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("name", String(255), nullable=False),
    Column("definition_key", String(64), nullable=False),
    Column("from_versions", JsonType, nullable=False),
    Column("to_version", Integer, nullable=False),
    Column("selection", JsonType, nullable=False),
    Column("mapping", JsonType, nullable=False),
    Column("field_values", JsonType, nullable=False),
    Column("reason", Text, nullable=False),
    Column("status", String(16), nullable=False),
    Column("counts", JsonType, nullable=False),
    Column("created_by", String(128), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("started_at", UTCDateTime),
    Column("finished_at", UTCDateTime),
    CheckConstraint(in_values("status", MIGRATION_STATUSES), name="status"),
    Index("ix_workflow_migrations_definition", "definition_key", "created_at"),
)

workflow_migration_items = Table(
    "workflow_migration_items",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "migration_id",
        BigInteger,
        ForeignKey("workflow_migrations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("instance_id", BigInteger, nullable=False),
    Column("verdict", String(16), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("result", JsonType, nullable=False),
    Column("error", Text),
    Column("finished_at", UTCDateTime, nullable=False),
    CheckConstraint(in_values("outcome", ITEM_OUTCOMES), name="outcome"),
    Index("ix_workflow_migration_items_migration", "migration_id", "instance_id"),
)
