"""Health inspection indexes (SPEC O-16, issue 34 item 3), on both
backends (:mod:`flowledger.db.health_schema`):

- ``ix_workflow_tokens_active`` on ``workflow_tokens`` (id), active tokens
  only, including ``node_key`` on PostgreSQL: the health rules check every
  open task's token (active, at the task's node) — tens of thousands of
  probes on a volume database, each into the token table's heap until now;
  with it each is a probe of a small index alone.
- ``ix_workflow_jobs_broken`` on ``workflow_jobs`` (type, instance_id),
  dead and failed jobs only, including on PostgreSQL the columns the rules
  read of such a job (id, status, node_key, task_id, updated_at,
  last_error_code, tenant_id): ``external_dispatch_failed`` /
  ``trigger_execution_failed`` start from the failed and dead jobs of their
  type, ``webhook_delivery_failed`` groups the dead deliveries by instance,
  — from the index alone instead of tens of thousands of scattered table
  pages.
- ``ix_workflow_jobs_dead_tenant`` on ``workflow_jobs`` (tenant_id), dead
  jobs only: the alert metrics count the dead jobs of every scope of an
  evaluation by tenant in one index-only pass (on the volume benchmark
  187,000 dead jobs: 133 ms through another index and the table, 75 ms
  with it).

- ``ix_workflow_tasks_open_instance`` (open tasks by instance) rebuilt
  with the columns the open-task rules read included on PostgreSQL: the
  planner joins the open tasks to the running instances in instance order
  through it, and on the volume benchmark read every open task's row from
  the table (86,000 open tasks, 85,000 pages: 220 of the inspection's
  ms). Open tasks only: tens of thousands of entries, built in a second.

Writes: an entry when a token becomes active (removed when it is consumed
or parked), and when a job dies or fails (removed when it is retried or
skipped).

Revision ID: 0025
Revises: 0024
Create Date: 2026-12-07 01:40:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0025"
down_revision = "0024"
branch_labels = None
depends_on = None

_ACTIVE = "state = 'active'"
_DEAD = "status = 'dead'"
_OPEN = "status IN ('pending', 'waiting')"
_OPEN_INSTANCE_INCLUDE = [
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
_DEAD_OR_FAILED = "status IN ('dead', 'failed')"


def upgrade() -> None:
    # if_not_exists: a large database may have built them CONCURRENTLY first
    op.create_index(
        "ix_workflow_tokens_active",
        "workflow_tokens",
        ["id"],
        postgresql_include=["node_key"],
        postgresql_where=sa.text(_ACTIVE),
        sqlite_where=sa.text(_ACTIVE),
        if_not_exists=True,
    )
    op.create_index(
        "ix_workflow_jobs_broken",
        "workflow_jobs",
        ["type", "instance_id"],
        postgresql_include=[
            "id",
            "status",
            "node_key",
            "task_id",
            "updated_at",
            "last_error_code",
            "tenant_id",
        ],
        postgresql_where=sa.text(_DEAD_OR_FAILED),
        sqlite_where=sa.text(_DEAD_OR_FAILED),
        if_not_exists=True,
    )
    op.create_index(
        "ix_workflow_jobs_dead_tenant",
        "workflow_jobs",
        ["tenant_id"],
        postgresql_where=sa.text(_DEAD),
        sqlite_where=sa.text(_DEAD),
        if_not_exists=True,
    )
    _open_instance(_OPEN_INSTANCE_INCLUDE)


def _open_instance(include: list[str]) -> None:
    op.drop_index("ix_workflow_tasks_open_instance", table_name="workflow_tasks")
    op.create_index(
        "ix_workflow_tasks_open_instance",
        "workflow_tasks",
        ["instance_id"],
        postgresql_include=include,
        postgresql_where=sa.text(_OPEN),
        sqlite_where=sa.text(_OPEN),
    )


def downgrade() -> None:
    _open_instance([])
    op.drop_index("ix_workflow_jobs_dead_tenant", table_name="workflow_jobs")
    op.drop_index("ix_workflow_jobs_broken", table_name="workflow_jobs")
    op.drop_index("ix_workflow_tokens_active", table_name="workflow_tokens")
