"""The declared schema of instance monitoring (SPEC O-1, O-2, O-5): saved
views (a named filter set per user and scope), the remind (催办) rate-limit
state of a task, and the indexes on the engine's tables that serve every
filter of the instance list on PostgreSQL (named in ``docs/monitoring.md``).
Table and index definitions only."""

from __future__ import annotations

from sqlalchemy import (
    DDL,
    Boolean,
    CheckConstraint,
    Column,
    Index,
    Integer,
    String,
    Table,
    Text,
    cast,
    event,
    text,
)

from flowledger.db.engine_schema import (
    workflow_form_writes,
    workflow_instances,
    workflow_tokens,
    workflow_trace,
)
from flowledger.db.schema import metadata
from flowledger.db.types import BigId, JsonType, UTCDateTime

VIEW_SCOPES = ("instances", "jobs", "tasks", "health")

workflow_saved_views = Table(
    "workflow_saved_views",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("owner", String(128), nullable=False),
    Column("scope", String(16), nullable=False),
    Column("name", String(255), nullable=False),
    Column("filters", JsonType, nullable=False),
    Column("shared", Boolean, nullable=False),
    Column("is_default", Boolean, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    CheckConstraint("scope IN ('instances', 'jobs', 'tasks', 'health')", name="scope"),
    Index("ix_workflow_saved_views_owner", "owner", "scope", "id"),
    Index("ix_workflow_saved_views_shared", "tenant_id", "scope", "shared"),
    # at most one default view per user and scope (SPEC O-1)
    Index(
        "uq_workflow_saved_views_default",
        "owner",
        "scope",
        unique=True,
        postgresql_where=text("is_default"),
        sqlite_where=text("is_default"),
    ),
)

workflow_task_reminders = Table(
    "workflow_task_reminders",
    metadata,
    Column("task_id", Integer, primary_key=True, autoincrement=False),
    Column("tenant_id", String(64), nullable=False),
    Column("last_reminded_by", String(128), nullable=False),
    Column("last_reminded_at", UTCDateTime, nullable=False),
    Column("reminders", Integer, nullable=False),
)

# ---------------------------------------------------------------- list indexes
# Sorting (created / updated / finished, newest first, id as tie-breaker),
# with and without a tenant scope.
Index(
    "ix_workflow_instances_tenant_created",
    workflow_instances.c.tenant_id,
    workflow_instances.c.created_at,
    workflow_instances.c.id,
)
Index("ix_workflow_instances_created_id", workflow_instances.c.created_at, workflow_instances.c.id)
Index("ix_workflow_instances_updated", workflow_instances.c.updated_at, workflow_instances.c.id)
Index(
    "ix_workflow_instances_finished_id", workflow_instances.c.finished_at, workflow_instances.c.id
)
# statuses without a tenant scope; "stuck for N minutes": running, not
# updated since the cut-off (index-only), anti-joined with the instances
# that wrote a trace row since (a range of ix_workflow_trace_created)
Index(
    "ix_workflow_instances_status_updated",
    workflow_instances.c.status,
    workflow_instances.c.updated_at,
    workflow_instances.c.id,
)
Index("ix_workflow_trace_created", workflow_trace.c.created_at, workflow_trace.c.instance_id)
Index(
    "ix_workflow_instances_definition_version",
    workflow_instances.c.definition_key,
    workflow_instances.c.definition_version,
    workflow_instances.c.created_at,
)
Index("ix_workflow_instances_trace", workflow_instances.c.trace_id)
Index(
    "ix_workflow_instances_has_error",
    workflow_instances.c.created_at,
    postgresql_where=text("error IS NOT NULL"),
    sqlite_where=text("error IS NOT NULL"),
)
# current node: where an active or parked token sits
Index(
    "ix_workflow_tokens_node_state",
    workflow_tokens.c.node_key,
    workflow_tokens.c.state,
    workflow_tokens.c.instance_id,
)
# keyword over the form's text: a trigram index (pg_trgm), PostgreSQL only
# (the extension is created before the tables, by create_all and by migration 0011)
event.listen(
    metadata,
    "before_create",
    DDL("CREATE EXTENSION IF NOT EXISTS pg_trgm").execute_if(  # type: ignore[no-untyped-call]
        dialect="postgresql"
    ),
)
Index(
    "ix_workflow_instances_form_trgm",
    cast(workflow_instances.c.form_data, Text).label("form_text"),
    postgresql_using="gin",
    postgresql_ops={"form_text": "gin_trgm_ops"},
).ddl_if(dialect="postgresql")

# The reason an operator gave for correcting form data (SPEC O-3 "fix the
# data, then retry"): a nullable column on the engine's form-write history,
# declared here so the engine's table module stays untouched.
workflow_form_writes.append_column(Column("reason", Text))
