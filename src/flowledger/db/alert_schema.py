"""The declared schema of alerting (SPEC O-22): rules with their evaluation
state, the alert events the evaluator writes, and silences. Table and index
definitions only; they share :data:`flowledger.db.schema.metadata`.

- ``workflow_alert_rules`` — a threshold rule on one named metric
  (``tenant_id`` NULL: the metric over every tenant), its channels, and the
  evaluator's state of it (ok → pending → firing → resolved, ``state_since``,
  the firing ``episode`` counter, which notification of the episode was
  sent, the last value).
- ``workflow_alert_events`` — one row per firing / resolved transition,
  UNIQUE on (rule, episode, kind): two evaluators can never write the same
  transition twice.
- ``workflow_alert_silences`` — a time window and a matcher (rule, metric,
  tenant; NULL matches anything), with its creator and comment.

And one index on the job ledger for the alert metrics (issue 34 item 3):
``ix_workflow_jobs_live_tenant`` (tenant_id, status, run_at) INCLUDE
(lease_until, execution_deadline), pending and running jobs only — a
tenant's backlog and stuck jobs are each an index-only range of it
(migration 0022, which says why dead jobs are not in it).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    CheckConstraint,
    Column,
    Float,
    Index,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from flowledger.db.schema import in_values, metadata
from flowledger.db.schema import workflow_jobs as _jobs
from flowledger.db.types import BigId, JsonType, UTCDateTime

COMPARISONS = ["gt", "gte", "lt", "lte"]
SEVERITIES = ["info", "warning", "critical"]
RULE_STATES = ["ok", "pending", "firing", "resolved"]
EVENT_KINDS = ["firing", "resolved"]

workflow_alert_rules = Table(
    "workflow_alert_rules",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64)),
    Column("name", String(255), nullable=False),
    Column("metric", String(64), nullable=False),
    Column("comparison", String(8), nullable=False),
    Column("threshold", Float, nullable=False),
    Column("for_seconds", Integer, nullable=False),
    Column("severity", String(16), nullable=False),
    Column("email_to", JsonType, nullable=False),
    Column("webhook_url", String(2048)),
    Column("webhook_secret_encrypted", Text),
    Column("in_app_users", JsonType, nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("state", String(16), nullable=False),
    Column("state_since", UTCDateTime),
    Column("episode", Integer, nullable=False),
    Column("notified", String(16)),
    Column("last_event_id", BigInteger),
    Column("last_value", Float),
    Column("evaluated_at", UTCDateTime),
    Column("created_by", String(128), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    CheckConstraint(in_values("comparison", COMPARISONS), name="comparison"),
    CheckConstraint(in_values("severity", SEVERITIES), name="severity"),
    CheckConstraint(in_values("state", RULE_STATES), name="state"),
    CheckConstraint("for_seconds >= 0", name="for_seconds"),
    # the tenant's list (keyset by id) and the evaluator's scan of enabled rules
    Index("ix_workflow_alert_rules_tenant", "tenant_id", "id"),
    Index("ix_workflow_alert_rules_enabled", "enabled", "id"),
)

workflow_alert_events = Table(
    "workflow_alert_events",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("rule_id", BigInteger, nullable=False),
    Column("tenant_id", String(64)),
    Column("rule_name", String(255), nullable=False),
    Column("metric", String(64), nullable=False),
    Column("kind", String(16), nullable=False),
    Column("episode", Integer, nullable=False),
    Column("value", Float),
    Column("comparison", String(8), nullable=False),
    Column("threshold", Float, nullable=False),
    Column("severity", String(16), nullable=False),
    Column("silenced", Boolean, nullable=False),
    Column("silence_id", BigInteger),
    Column("notified_at", UTCDateTime),
    Column("notification_jobs", JsonType, nullable=False),
    Column("occurred_at", UTCDateTime, nullable=False),
    CheckConstraint(in_values("kind", EVENT_KINDS), name="kind"),
    UniqueConstraint("rule_id", "episode", "kind"),
    # the events list: by tenant, newest first; and one rule's events
    Index("ix_workflow_alert_events_tenant", "tenant_id", "id"),
    Index("ix_workflow_alert_events_rule", "rule_id", "id"),
)

workflow_alert_silences = Table(
    "workflow_alert_silences",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64)),
    Column("rule_id", BigInteger),
    Column("metric", String(64)),
    Column("starts_at", UTCDateTime, nullable=False),
    Column("ends_at", UTCDateTime, nullable=False),
    Column("comment", Text, nullable=False),
    Column("created_by", String(128), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("expired_at", UTCDateTime),
    CheckConstraint("ends_at >= starts_at", name="window"),
    # the evaluator's "active now" lookup (ends_at > now) and the tenant's list
    Index("ix_workflow_alert_silences_ends", "ends_at"),
    Index("ix_workflow_alert_silences_tenant", "tenant_id", "id"),
)

_LIVE = text("status IN ('pending', 'running')")

ix_jobs_live_tenant = Index(
    "ix_workflow_jobs_live_tenant",
    _jobs.c.tenant_id,
    _jobs.c.status,
    _jobs.c.run_at,
    postgresql_include=["lease_until", "execution_deadline"],
    postgresql_where=_LIVE,
    sqlite_where=_LIVE,
)
