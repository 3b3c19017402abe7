"""The declared schema of recorded batch operations (issue 29 item 4): one
row per batch an operator started (batch recovery, scope suspend/resume,
targeted recovery, job batch retry/skip, replay), as Temporal records a
BatchOperation. Table and index definitions only; they share
:data:`flowledger.db.schema.metadata`.

- ``workflow_batch_operations`` — the batch's id (a uuid hex; for job
  batches it is also the jobs' ``replay_batch_id``), its kind, state
  (``running`` / ``completed`` / ``failed``), who started it and why, the
  caller's tenant scope (``tenant_scope``: the sorted tenant list joined by
  commas, NULL for every tenant), the request echo, the counts per outcome
  (``done`` / ``skipped`` / ``failed`` of ``total``) and the per-item results.
"""

from __future__ import annotations

from sqlalchemy import Boolean, CheckConstraint, Column, Index, Integer, String, Table, Text

from flowledger.db.schema import in_values, metadata
from flowledger.db.types import JsonType, UTCDateTime

BATCH_STATES = ["running", "completed", "failed"]

workflow_batch_operations = Table(
    "workflow_batch_operations",
    metadata,
    Column("id", String(64), primary_key=True),
    Column("kind", String(64), nullable=False),
    Column("state", String(16), nullable=False),
    Column("dry_run", Boolean, nullable=False),
    Column("actor", String(128), nullable=False),
    Column("reason", Text),
    Column("tenant_scope", Text),
    Column("request", JsonType, nullable=False),
    Column("total", Integer, nullable=False),
    Column("done", Integer, nullable=False),
    Column("skipped", Integer, nullable=False),
    Column("failed", Integer, nullable=False),
    Column("items", JsonType, nullable=False),
    Column("error", Text),
    Column("started_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    CheckConstraint(in_values("state", BATCH_STATES), name="state"),
    # the list, newest first (optionally one scope's)
    Index("ix_workflow_batch_operations_started", "started_at", "id"),
    Index("ix_workflow_batch_operations_scope", "tenant_scope", "started_at", "id"),
)
