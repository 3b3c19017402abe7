"""The declared schema of event subscriptions and subscription hits (SPEC X-5).
Table and index definitions only; they share
:data:`flowledger.db.schema.metadata`.

- ``workflow_event_subscriptions`` — where a tenant wants its events: event
  types (a JSON list; ``"*"`` or ``"task.*"`` style wildcards), an optional
  definition key filter, the target URL, the HMAC secret encrypted at rest
  (Fernet, :mod:`flowledger.outbound.secrets`), the enabled flag. Deleting a
  subscription is soft (``deleted_at``) so its hits stay on record.
- ``workflow_subscription_hits`` — one row per (subscription, outbox event)
  that matched, UNIQUE on that pair, with its ``webhook_delivery`` job and
  the delivery's status.
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
    UniqueConstraint,
)

from flowledger.db.schema import in_values, metadata
from flowledger.db.types import BigId, JsonType, UTCDateTime

HIT_STATUSES = ["pending", "delivered", "failed", "skipped"]

workflow_event_subscriptions = Table(
    "workflow_event_subscriptions",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("name", String(255), nullable=False),
    Column("event_types", JsonType, nullable=False),
    Column("definition_key", String(64)),
    Column("target_url", String(2048), nullable=False),
    Column("secret_encrypted", Text, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("created_by", String(128), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("deleted_at", UTCDateTime),
    # matching (enabled subscriptions of a batch's tenants) and the tenant's list
    Index("ix_workflow_event_subscriptions_tenant", "tenant_id", "enabled", "id"),
)

workflow_subscription_hits = Table(
    "workflow_subscription_hits",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "subscription_id",
        BigInteger,
        ForeignKey("workflow_event_subscriptions.id", ondelete="CASCADE"),
        nullable=False,
    ),
    # the outbox row (no foreign key: outbox retention must not touch hits)
    Column("event_id", BigInteger, nullable=False),
    Column("event_type", String(64), nullable=False),
    Column("tenant_id", String(64), nullable=False),
    Column("instance_id", BigInteger),
    Column("job_id", BigInteger),
    Column("status", String(16), nullable=False),
    Column("response_status", Integer),
    Column("last_error", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    CheckConstraint(in_values("status", HIT_STATUSES), name="status"),
    # one hit per (subscription, event); also serves the hit list of a subscription
    UniqueConstraint("subscription_id", "event_id"),
    # the event-dispatch view of an instance's diagnostics (SPEC O-10)
    Index("ix_workflow_subscription_hits_instance", "instance_id"),
)
