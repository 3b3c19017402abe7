"""Node-bottleneck index (SPEC O-14): ``ix_workflow_tasks_node_finished``
on ``workflow_tasks`` (definition_key, node_key, finished_at, handling time
in ms) INCLUDE (tenant_id, created_at), completed human tasks only;
PostgreSQL only (SQLite's node bottlenecks never read it).

The node-bottleneck panel finds the distinct (definition, node) keys by a
loose index scan over it (one descent per node) and aggregates each node's
count, mean and p90 handling time over that node's own range of the period:
no hash table of every completed task of the period and no per-node arrays
(at 100,000 instances, 168,510 completed tasks in the period: the
statement's backend CPU time from 121 to 81 ms, best of 10). The last key is
the handling time exactly as the panel computes it
(``flowledger.db.portable.milliseconds_between(created_at, finished_at)``),
so the index-only scan returns it instead of computing it for every task
(a further ~15 ms).
Writes: one entry when a human task completes — pending tasks, cc and
system tasks are outside the predicate.

Revision ID: 0014
Revises: 0013
Create Date: 2026-12-01 20:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0013"
branch_labels = None
depends_on = None

_COMPLETED_HUMAN = "status = 'completed' AND kind IN ('approval', 'handle', 'catch', 'resubmit')"


# the rendering of milliseconds_between(created_at, finished_at) on PostgreSQL
_HANDLING_MS = "(CAST(date_part('epoch', finished_at - created_at) AS FLOAT) * 1000.0)"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.create_index(
        "ix_workflow_tasks_node_finished",
        "workflow_tasks",
        ["definition_key", "node_key", "finished_at", sa.text(_HANDLING_MS)],
        postgresql_include=["tenant_id", "created_at"],
        postgresql_where=sa.text(_COMPLETED_HUMAN),
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.drop_index("ix_workflow_tasks_node_finished", table_name="workflow_tasks")
