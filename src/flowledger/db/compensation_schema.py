"""The declared schema of compensation tickets and their history (SPEC C-8:
workflow_compensations, workflow_compensation_logs). Table and index
definitions only; they share :data:`flowledger.db.schema.metadata`.

The value sets of the state columns live here as small enums because the
CHECK constraints need them and this layer may import nothing above it;
:mod:`flowledger.compensation` re-exports them.

Ticket ``status`` (what the operator decided)::

    pending --resume (repair task done, flow continues)--> resolved
    pending --resolve (release: closes the ticket only)--> resolved
    pending --terminate (instance rejected)-->              terminated

``compensation_action_status`` (the automatic action's summary; the job
ledger stays the authority while a job waits for a retry or for an
operator's confirmation)::

    none --enqueue--> pending --claimed--> running --ok--> succeeded
    running --failed, budget left--> pending
    running --failed, final (last attempt, permanent, unconfirmed)--> failed
    failed --operator retry (a new job)--> pending
"""

from __future__ import annotations

from enum import StrEnum

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

from flowledger.db.schema import in_values as _in
from flowledger.db.schema import metadata
from flowledger.db.types import BigId, JsonType, UTCDateTime


class TicketStatus(StrEnum):
    PENDING = "pending"
    RESOLVED = "resolved"
    TERMINATED = "terminated"


class ActionStatus(StrEnum):
    NONE = "none"
    PENDING = "pending"
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class LogKind(StrEnum):
    CREATED = "created"
    NOTE = "note"
    ATTACHMENT = "attachment"
    ACTION_RESULT = "action_result"
    RETRY = "retry"
    RESUME = "resume"
    RELEASE = "release"
    RESOLVE = "resolve"
    TERMINATE = "terminate"


workflow_compensations = Table(
    "workflow_compensations",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column(
        "instance_id",
        Integer,
        ForeignKey("workflow_instances.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("failed_node_key", String(128), nullable=False),
    # the node whose action this is (for a Saga ticket: the compensated node)
    Column("node_key", String(128), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("status", String(16), nullable=False),
    Column("compensation_action_status", String(16), nullable=False),
    Column("action_payload", JsonType),
    Column("error", Text),
    Column("repair_task_id", BigInteger),
    Column("action_job_id", BigInteger),
    Column("idempotency_key", String(255), unique=True),
    Column("created_by", String(128), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("resolved_at", UTCDateTime),
    Column("resolved_by", String(128)),
    CheckConstraint(_in("status", [s.value for s in TicketStatus]), name="status"),
    CheckConstraint(
        _in("compensation_action_status", [s.value for s in ActionStatus]),
        name="action_status",
    ),
    # the list filters of SPEC C-9, newest first: within the caller's
    # tenants by status, every tenant by status, and one instance's tickets
    Index("ix_workflow_compensations_tenant_status", "tenant_id", "status", "id"),
    Index("ix_workflow_compensations_status", "status", "id"),
    Index("ix_workflow_compensations_instance", "instance_id", "id"),
    # the ticket of a repair task (a handled catch task closes its ticket)
    Index("ix_workflow_compensations_repair_task", "repair_task_id"),
)

workflow_compensation_logs = Table(
    "workflow_compensation_logs",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "compensation_id",
        BigInteger,
        ForeignKey("workflow_compensations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("kind", String(16), nullable=False),
    Column("actor", String(128), nullable=False),
    Column("message", Text),
    Column("detail", JsonType),
    # attachments: the generated file name under settings.attachments_dir,
    # the uploader's file name, the checked content type and the size
    Column("stored_name", String(128)),
    Column("original_name", String(255)),
    Column("content_type", String(128)),
    Column("size_bytes", BigInteger),
    Column("created_at", UTCDateTime, nullable=False),
    CheckConstraint(_in("kind", [k.value for k in LogKind]), name="kind"),
    Index("ix_workflow_compensation_logs_compensation", "compensation_id", "id"),
)
