"""The indexes that serve the analytics read models (SPEC O-14) on tables
declared elsewhere (instances and tasks). Index definitions only; attaching
an :class:`~sqlalchemy.Index` to a table's columns registers it in the shared
metadata.

PostgreSQL ``INCLUDE`` columns make each panel an index-only scan:

- ``ix_workflow_instances_created`` (created_at): starts per day, starts in
  the last 7 days, top definitions of a period.
- ``ix_workflow_instances_finished`` (finished_at, finished only): finishes
  per day and average durations.
- ``ix_workflow_tasks_due`` (due_at, pending with a due time): timeouts.
- ``ix_workflow_tasks_finished`` (finished_at, completed only): handling
  times of node bottlenecks and approver workload.
- ``ix_workflow_tasks_pending`` (definition_key, node_key; pending human
  tasks only): backlogs (read in group order) and pending-now counts.
- ``ix_workflow_tasks_node_finished`` (definition_key, node_key,
  finished_at, handling time in ms; completed human tasks only, PostgreSQL
  only, migration 0014): node bottlenecks — the distinct (definition, node)
  keys by a loose index scan, then each node's handling times over its own
  range of the period.

The task indexes include the task's own ``definition_key`` (copied
from its instance, migration 0013), so a group or filter by definition never
joins ``workflow_instances``.
"""

from __future__ import annotations

from sqlalchemy import Index, text

from flowledger.db.engine_schema import workflow_instances as _instances
from flowledger.db.engine_schema import workflow_tasks as _tasks
from flowledger.db.portable import milliseconds_between

_FINISHED = text("finished_at IS NOT NULL")
_PENDING_DUE = text("status = 'pending' AND due_at IS NOT NULL")
_COMPLETED = text("status = 'completed'")
# the human task kinds of ``flowledger.ops.analytics.instances.HUMAN_TASK_KINDS`` (a
# test keeps the two equal): every pending-task count of the panels filters
# by them, and with the filter in the predicate the planner reads the index
# alone instead of the heap over ix_workflow_tasks_open_instance
_PENDING_HUMAN = text("status = 'pending' AND kind IN ('approval', 'handle', 'catch', 'resubmit')")
_COMPLETED_HUMAN = text(
    "status = 'completed' AND kind IN ('approval', 'handle', 'catch', 'resubmit')"
)

ix_instances_created = Index(
    "ix_workflow_instances_created",
    _instances.c.created_at,
    postgresql_include=["tenant_id", "definition_key", "status", "finished_at"],
)
ix_instances_finished = Index(
    "ix_workflow_instances_finished",
    _instances.c.finished_at,
    postgresql_include=["tenant_id", "definition_key", "status", "created_at"],
    postgresql_where=_FINISHED,
    sqlite_where=_FINISHED,
)
ix_tasks_due = Index(
    "ix_workflow_tasks_due",
    _tasks.c.due_at,
    # escalated_at: the timeouts panel's escalated count (migration 0018)
    postgresql_include=[
        "tenant_id",
        "definition_key",
        "instance_id",
        "node_key",
        "assignee",
        "escalated_at",
    ],
    postgresql_where=_PENDING_DUE,
    sqlite_where=_PENDING_DUE,
)
ix_tasks_finished = Index(
    "ix_workflow_tasks_finished",
    _tasks.c.finished_at,
    postgresql_include=[
        "tenant_id",
        "definition_key",
        "instance_id",
        "node_key",
        "assignee",
        "kind",
        "created_at",
    ],
    postgresql_where=_COMPLETED,
    sqlite_where=_COMPLETED,
)
ix_tasks_pending = Index(
    "ix_workflow_tasks_pending",
    _tasks.c.definition_key,
    _tasks.c.node_key,
    postgresql_include=["tenant_id", "assignee", "kind"],
    postgresql_where=_PENDING_HUMAN,
    sqlite_where=_PENDING_HUMAN,
)
# PostgreSQL only (SQLite's node bottlenecks never read it): the last key is
# the handling time exactly as the panel computes it
# (milliseconds_between(created_at, finished_at)), so the index-only scan
# returns it instead of computing it again for every task
ix_tasks_node_finished = Index(
    "ix_workflow_tasks_node_finished",
    _tasks.c.definition_key,
    _tasks.c.node_key,
    _tasks.c.finished_at,
    milliseconds_between(_tasks.c.created_at, _tasks.c.finished_at),
    postgresql_include=["tenant_id", "created_at"],
    postgresql_where=_COMPLETED_HUMAN,
).ddl_if(dialect="postgresql")
