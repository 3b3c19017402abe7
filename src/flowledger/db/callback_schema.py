"""The declared schema of recorded external callbacks (SPEC X-1 async triggers,
X-2 external approvals). Table and index definitions only; they share
:data:`flowledger.db.schema.metadata`.

``workflow_callbacks`` holds one row per decided subject: an external
approval's decision per task (``kind = 'external'``, ``subject_id`` = the task
id) and an async trigger's result per job (``kind = 'trigger'``,
``subject_id`` = the ``trigger_dispatch`` job id). The unique constraint on
(kind, subject_id) is what makes a duplicate or late callback answer with the
recorded decision instead of deciding twice. ``source`` says who decided:
``callback`` (the external system) or ``dispatch_fallback`` (X-2's
dispatchFallback auto_approve / auto_reject)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    CheckConstraint,
    Column,
    Index,
    String,
    Table,
    Text,
    UniqueConstraint,
)

from flowledger.db.schema import in_values as _in
from flowledger.db.schema import metadata
from flowledger.db.types import BigId, JsonType, UTCDateTime

CALLBACK_KINDS = ["external", "trigger"]
CALLBACK_OUTCOMES = ["approve", "reject", "succeeded", "failed"]
CALLBACK_SOURCES = ["callback", "dispatch_fallback"]

workflow_callbacks = Table(
    "workflow_callbacks",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("kind", String(16), nullable=False),
    Column("subject_id", BigInteger, nullable=False),
    Column("instance_id", BigInteger, nullable=False),
    Column("task_id", BigInteger, nullable=False),
    Column("tenant_id", String(64), nullable=False),
    Column("outcome", String(16), nullable=False),
    Column("source", String(32), nullable=False),
    Column("decided_by", String(128)),
    Column("comment", Text),
    Column("body", JsonType),
    Column("received_at", UTCDateTime, nullable=False),
    CheckConstraint(_in("kind", CALLBACK_KINDS), name="kind"),
    CheckConstraint(_in("outcome", CALLBACK_OUTCOMES), name="outcome"),
    CheckConstraint(_in("source", CALLBACK_SOURCES), name="source"),
    UniqueConstraint("kind", "subject_id"),
    Index("ix_workflow_callbacks_instance", "instance_id"),
)
