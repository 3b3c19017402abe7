"""The declared schema of the health inspection (SPEC O-16): the health
history table and the partial indexes that serve the inspection's rules.
Table and index definitions only; they share
:data:`flowledger.db.schema.metadata`.

- ``workflow_health_snapshots`` — one row per snapshot of the leader-gated
  health snapshot service: the health score, the inspection's counts by rule
  and level, and the runtime-status figures, at ``taken_at`` (unique, so two
  leaders in one instant cannot write twice).
- ``ix_workflow_tasks_open_created`` — open tasks (pending / waiting) by
  creation time: token_task_mismatch.
- ``ix_workflow_tasks_open_kind`` — open tasks by kind and creation time: the
  per-kind rules (delay, trigger, subprocess, external approval, human).
- ``ix_workflow_tasks_open_instance`` — open tasks by instance (including,
  since 0024, every column the open-task rules read): the open tasks' one
  pass joined to the running instances in instance order, and the "no open
  task" anti-joins (instance_stalled: a merge anti-join with
  ``ix_workflow_instances_running``, both index-only).
- ``ix_workflow_jobs_task`` — jobs attached to a task by (type, task): "does
  this task have a live / succeeded / executed job of type T" of every task
  rule, and the due jobs of a type (delay_overdue, task_timeout_overdue).
- ``ix_workflow_instances_running`` — running instances by id: the instance
  probe of every rule and instance_stalled.
- ``ix_workflow_tokens_active`` — active tokens by id (with their node): an
  open task's token check (token_task_mismatch, the open tasks' one pass),
  a probe of a small index instead of the token table (0024).
- ``ix_workflow_jobs_broken`` — failed and dead jobs by (type, instance):
  external_dispatch_failed / trigger_execution_failed start from them, and
  webhook_delivery_failed groups them by instance without a sort (0024).
- ``ix_workflow_jobs_dead_tenant`` — dead jobs by tenant: the alert metrics'
  dead letters of every scope, one index-only pass (a handful of distinct
  keys: the B-tree's deduplication keeps it small) (0024).

On PostgreSQL each carries the columns its rules read (INCLUDE), so the
scans and probes are index-only.
"""

from __future__ import annotations

from sqlalchemy import Column, Index, Integer, Table, text

from flowledger.db.engine_schema import workflow_instances, workflow_tasks, workflow_tokens
from flowledger.db.schema import metadata, workflow_jobs
from flowledger.db.types import BigId, JsonType, UTCDateTime

_OPEN = text("status IN ('pending', 'waiting')")
_RUNNING = text("status = 'running'")
_WITH_TASK = text("task_id IS NOT NULL")
_ACTIVE = text("state = 'active'")
_BROKEN = text("status IN ('dead', 'failed')")
_DEAD = text("status = 'dead'")
# PostgreSQL INCLUDE columns, so the rules' scans and probes are index-only
TASK_INCLUDE = [
    "id",
    "instance_id",
    "token_id",
    "status",
    "tenant_id",
    "node_key",
    "assignee",
    "due_at",
]
# the open tasks in instance order (a merge join with the running
# instances) read from the index alone too (0024)
OPEN_INSTANCE_INCLUDE = [
    "id",
    "token_id",
    "status",
    "tenant_id",
    "node_key",
    "assignee",
    "due_at",
    "kind",
    "created_at",
]
JOB_INCLUDE = ["id", "status", "run_at", "instance_id"]
INSTANCE_INCLUDE = ["tenant_id", "definition_key", "updated_at"]
BROKEN_INCLUDE = [
    "id",
    "status",
    "node_key",
    "task_id",
    "updated_at",
    "last_error_code",
    "tenant_id",
]

workflow_health_snapshots = Table(
    "workflow_health_snapshots",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("taken_at", UTCDateTime, nullable=False, unique=True),
    Column("score", Integer, nullable=False),
    Column("by_rule", JsonType, nullable=False),
    Column("by_level", JsonType, nullable=False),
    Column("runtime", JsonType, nullable=False),
)

Index(
    "ix_workflow_tasks_open_created",
    workflow_tasks.c.created_at,
    postgresql_include=TASK_INCLUDE,
    postgresql_where=_OPEN,
    sqlite_where=_OPEN,
)
Index(
    "ix_workflow_tasks_open_kind",
    workflow_tasks.c.kind,
    workflow_tasks.c.created_at,
    postgresql_include=TASK_INCLUDE,
    postgresql_where=_OPEN,
    sqlite_where=_OPEN,
)
Index(
    "ix_workflow_tasks_open_instance",
    workflow_tasks.c.instance_id,
    postgresql_include=OPEN_INSTANCE_INCLUDE,
    postgresql_where=_OPEN,
    sqlite_where=_OPEN,
)
Index(
    "ix_workflow_jobs_task",
    workflow_jobs.c.type,
    workflow_jobs.c.task_id,
    postgresql_include=JOB_INCLUDE,
    postgresql_where=_WITH_TASK,
    sqlite_where=_WITH_TASK,
)
Index(
    "ix_workflow_instances_running",
    workflow_instances.c.id,
    postgresql_include=INSTANCE_INCLUDE,
    postgresql_where=_RUNNING,
    sqlite_where=_RUNNING,
)
Index(
    "ix_workflow_tokens_active",
    workflow_tokens.c.id,
    postgresql_include=["node_key"],
    postgresql_where=_ACTIVE,
    sqlite_where=_ACTIVE,
)
Index(
    "ix_workflow_jobs_broken",
    workflow_jobs.c.type,
    workflow_jobs.c.instance_id,
    postgresql_include=BROKEN_INCLUDE,
    postgresql_where=_BROKEN,
    sqlite_where=_BROKEN,
)
Index(
    "ix_workflow_jobs_dead_tenant",
    workflow_jobs.c.tenant_id,
    postgresql_where=_DEAD,
    sqlite_where=_DEAD,
)
