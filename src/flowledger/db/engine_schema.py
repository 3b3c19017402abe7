"""The declared schema of the process engine and the API: definitions and
their immutable versions, instances with their frozen snapshot, tokens, fork
frames, tasks, comments, form-write history, the engine trace, the event
outbox, schedules, users, API tokens, the operation audit and in-app
messages. Table and index definitions only."""

from __future__ import annotations

from sqlalchemy import (
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

from flowledger.db.schema import in_values as _in
from flowledger.db.schema import metadata
from flowledger.db.types import BigId, JsonType, UTCDateTime
from flowledger.states import InstanceStatus, TaskStatus, TokenState

workflow_definitions = Table(
    "workflow_definitions",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("key", String(64), nullable=False),
    Column("version", Integer, nullable=False),
    Column("name", String(255), nullable=False),
    Column("source", JsonType, nullable=False),
    Column("deployed_by", String(128), nullable=False),
    Column("deployed_at", UTCDateTime, nullable=False),
    UniqueConstraint("tenant_id", "key", "version"),
)

workflow_instances = Table(
    "workflow_instances",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("definition_id", Integer, ForeignKey("workflow_definitions.id"), nullable=False),
    Column("definition_key", String(64), nullable=False),
    Column("definition_version", Integer, nullable=False),
    Column("snapshot", JsonType, nullable=False),
    Column("status", String(16), nullable=False),
    Column("form_data", JsonType, nullable=False),
    Column("initiator", String(128), nullable=False),
    Column("parent_instance_id", Integer),
    Column("parent_task_id", Integer),
    Column("trace_id", String(64), nullable=False),
    Column("error", Text),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    CheckConstraint(_in("status", [s.value for s in InstanceStatus]), name="status"),
    Index("ix_workflow_instances_tenant_status", "tenant_id", "status", "created_at"),
    Index("ix_workflow_instances_definition", "definition_key", "status"),
    Index("ix_workflow_instances_initiator", "initiator", "status"),
    Index("ix_workflow_instances_parent", "parent_instance_id"),
)

workflow_forks = Table(
    "workflow_forks",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "instance_id",
        Integer,
        ForeignKey("workflow_instances.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("node_key", String(128), nullable=False),
    Column("gateway", String(16), nullable=False),
    Column("expected", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_workflow_forks_instance", "instance_id"),
)

workflow_tokens = Table(
    "workflow_tokens",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "instance_id",
        Integer,
        ForeignKey("workflow_instances.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("node_key", String(128), nullable=False),
    Column("state", String(16), nullable=False),
    Column("fork_stack", JsonType, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("consumed_at", UTCDateTime),
    CheckConstraint(_in("state", [s.value for s in TokenState]), name="state"),
    Index("ix_workflow_tokens_instance_state", "instance_id", "state"),
)

workflow_tasks = Table(
    "workflow_tasks",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "instance_id",
        Integer,
        ForeignKey("workflow_instances.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("tenant_id", String(64), nullable=False),
    # the instance's definition key, copied when the task is created (an
    # instance never changes its key): analytics group tasks by definition
    # without joining the instance (SPEC O-14, migration 0013)
    Column("definition_key", String(64), nullable=False),
    Column("node_key", String(128), nullable=False),
    Column("token_id", Integer),
    Column("kind", String(24), nullable=False),
    Column("status", String(16), nullable=False),
    Column("assignee", String(128), nullable=False),
    Column("action", String(16)),
    Column("comment", Text),
    Column("due_at", UTCDateTime),
    Column("created_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime),
    Column("finished_by", String(128)),
    # a deadline's escalation (issue 31 item 4, migration 0018): the last
    # step of the node's chain done (0: the due time passed), and when the
    # first transfer or administrator notice happened
    Column("escalation_step", Integer),
    Column("escalated_at", UTCDateTime),
    CheckConstraint(_in("status", [s.value for s in TaskStatus]), name="status"),
    Index("ix_workflow_tasks_instance", "instance_id", "status"),
    Index("ix_workflow_tasks_assignee", "assignee", "status"),
    Index("ix_workflow_tasks_tenant_status", "tenant_id", "status", "created_at"),
)

workflow_comments = Table(
    "workflow_comments",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "instance_id",
        Integer,
        ForeignKey("workflow_instances.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("task_id", Integer),
    Column("author", String(128), nullable=False),
    Column("body", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_workflow_comments_instance", "instance_id"),
)

workflow_form_writes = Table(
    "workflow_form_writes",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column(
        "instance_id",
        Integer,
        ForeignKey("workflow_instances.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("written_by", String(128), nullable=False),
    Column("source", String(64), nullable=False),
    Column("changes", JsonType, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_workflow_form_writes_instance", "instance_id"),
)

workflow_trace = Table(
    "workflow_trace",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("instance_id", Integer, nullable=False),
    Column("trace_id", String(64), nullable=False),
    Column("event", String(48), nullable=False),
    Column("node_key", String(128)),
    Column("token_id", Integer),
    Column("task_id", Integer),
    Column("job_id", Integer),
    Column("detail", JsonType),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_workflow_trace_instance", "instance_id", "id"),
    Index("ix_workflow_trace_trace", "trace_id"),
)

workflow_event_outbox = Table(
    "workflow_event_outbox",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("instance_id", Integer),
    Column("definition_key", String(64)),
    Column("event_type", String(64), nullable=False),
    Column("payload", JsonType, nullable=False),
    Column("status", String(16), nullable=False),
    Column("trace_id", String(64), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("dispatched_at", UTCDateTime),
    CheckConstraint("status IN ('pending', 'dispatched', 'failed')", name="status"),
    Index("ix_workflow_event_outbox_status", "status", "created_at"),
    Index("ix_workflow_event_outbox_instance", "instance_id"),
)

workflow_schedules = Table(
    "workflow_schedules",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("name", String(255), nullable=False),
    Column("definition_key", String(64), nullable=False),
    Column("cron", String(128), nullable=False),
    Column("timezone", String(64), nullable=False),
    Column("form", JsonType, nullable=False),
    Column("initiator", String(128), nullable=False),
    Column("enabled", Boolean, nullable=False),
    Column("next_run_at", UTCDateTime),
    Column("last_run_at", UTCDateTime),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_workflow_schedules_due", "enabled", "next_run_at"),
)

users = Table(
    "users",
    metadata,
    Column("id", String(128), primary_key=True),
    Column("display_name", String(255), nullable=False),
    Column("roles", JsonType, nullable=False),
    Column("permissions", JsonType, nullable=False),
    Column("tenants", JsonType, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    # the user a deadline's ``transfer`` to ``manager`` hands this user's
    # tasks to (issue 31 item 4, migration 0018)
    Column("manager_id", String(128)),
)

api_tokens = Table(
    "api_tokens",
    metadata,
    Column("token_hash", String(64), primary_key=True),
    Column("user_id", String(128), ForeignKey("users.id", ondelete="CASCADE"), nullable=False),
    Column("permissions", JsonType),
    Column("tenants", JsonType),
    Column("created_at", UTCDateTime, nullable=False),
    Column("revoked_at", UTCDateTime),
)

operation_audit = Table(
    "operation_audit",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("actor", String(128), nullable=False),
    Column("action", String(64), nullable=False),
    Column("target_type", String(32), nullable=False),
    Column("target_id", String(64)),
    Column("tenant_id", String(64)),
    Column("reason", Text),
    Column("detail", JsonType),
    Column("result", String(16), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_operation_audit_target", "target_type", "target_id"),
    Index("ix_operation_audit_created", "created_at"),
)

workflow_messages = Table(
    "workflow_messages",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("tenant_id", String(64), nullable=False),
    Column("recipient", String(128), nullable=False),
    Column("title", String(255), nullable=False),
    Column("body", Text, nullable=False),
    Column("link", String(1024)),
    Column("kind", String(32), nullable=False),
    Column("read_at", UTCDateTime),
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_workflow_messages_recipient", "recipient", "read_at", "id"),
)
