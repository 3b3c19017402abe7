"""The declared schema of data retention (SPEC O-20): operator overrides of
the retention policies and the record of every retention run. Table and
index definitions only; they share :data:`flowledger.db.schema.metadata`.

- ``workflow_retention_policies`` — one row per policy an operator changed
  (enabled flag, keep-N-days); a policy without a row uses its default.
- ``workflow_retention_runs`` — one row per run: trigger (``scheduled`` /
  ``manual``), actor, status (``running`` / ``succeeded`` / ``failed``),
  times, duration and rows removed.
- ``workflow_retention_run_items`` — one row per (run, policy): the cut-off
  used, rows removed (per table in ``detail``), batches, duration, and why a
  policy was skipped (disabled, table missing).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
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

RUN_TRIGGERS = ["scheduled", "manual"]
RUN_STATUSES = ["running", "succeeded", "failed"]

workflow_retention_policies = Table(
    "workflow_retention_policies",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("enabled", Boolean, nullable=False),
    Column("keep_days", Integer, nullable=False),
    Column("updated_by", String(128), nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    CheckConstraint("keep_days >= 1", name="keep_days"),
)

workflow_retention_runs = Table(
    "workflow_retention_runs",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("trigger", String(16), nullable=False),
    Column("actor", String(128), nullable=False),
    Column("status", String(16), nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("duration_ms", Integer),
    Column("rows_removed", BigInteger, nullable=False),
    Column("error", Text),
    CheckConstraint(in_values("trigger", RUN_TRIGGERS), name="trigger"),
    CheckConstraint(in_values("status", RUN_STATUSES), name="status"),
    # "has today's scheduled run happened" and the newest runs first
    Index("ix_workflow_retention_runs_trigger", "trigger", "started_at"),
)

workflow_retention_run_items = Table(
    "workflow_retention_run_items",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "run_id",
        BigInteger,
        ForeignKey("workflow_retention_runs.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("policy", String(64), nullable=False),
    Column("keep_days", Integer, nullable=False),
    Column("cutoff", UTCDateTime, nullable=False),
    Column("rows_removed", BigInteger, nullable=False),
    Column("batches", Integer, nullable=False),
    Column("duration_ms", Integer, nullable=False),
    Column("skipped", String(64)),
    Column("detail", JsonType),
    Index("ix_workflow_retention_run_items_run", "run_id", "id"),
)
