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
- ``ix_workflow_jobs_task`` — jobs by (instance, task, type): "does this task
  have a live / succeeded / executed job of type T" of every task rule.
- ``ix_workflow_instances_running`` — running instances: instance_stalled.
"""

from __future__ import annotations

from sqlalchemy import Column, Index, Integer, Table, text

from flowledger.db.engine_schema import workflow_instances, workflow_tasks
from flowledger.db.schema import metadata, workflow_jobs
from flowledger.db.types import BigId, JsonType, UTCDateTime

_OPEN = text("status IN ('pending', 'waiting')")
_RUNNING = text("status = 'running'")

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
    postgresql_where=_OPEN,
    sqlite_where=_OPEN,
)
Index(
    "ix_workflow_tasks_open_kind",
    workflow_tasks.c.kind,
    workflow_tasks.c.created_at,
    postgresql_where=_OPEN,
    sqlite_where=_OPEN,
)
Index(
    "ix_workflow_jobs_task",
    workflow_jobs.c.instance_id,
    workflow_jobs.c.task_id,
    workflow_jobs.c.type,
    postgresql_where=text("task_id IS NOT NULL"),
    sqlite_where=text("task_id IS NOT NULL"),
)
Index(
    "ix_workflow_instances_running",
    workflow_instances.c.updated_at,
    postgresql_where=_RUNNING,
    sqlite_where=_RUNNING,
)
