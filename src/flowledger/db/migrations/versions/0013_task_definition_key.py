"""The definition key on tasks (SPEC O-14): ``workflow_tasks.definition_key``
(NOT NULL), copied from the task's instance — backfilled here, set by the
engine when it creates a task — and the three analytics task indexes
(``ix_workflow_tasks_finished``, ``ix_workflow_tasks_pending``,
``ix_workflow_tasks_due``) rebuilt to include it, so the node-bottleneck
panel groups by definition and node from the index alone, without joining
``workflow_instances``.

Revision ID: 0013
Revises: 0012
Create Date: 2026-12-01 12:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None

_COMPLETED = "status = 'completed'"
_PENDING = "status = 'pending'"
_PENDING_DUE = "status = 'pending' AND due_at IS NOT NULL"
_PENDING_HUMAN = "status = 'pending' AND kind IN ('approval', 'handle', 'catch', 'resubmit')"

Shape = tuple[list[str], list[str], str]  # key columns, INCLUDE columns, predicate

# name, shape before 0011, shape after
_INDEXES: list[tuple[str, Shape, Shape]] = [
    (
        "ix_workflow_tasks_finished",
        (
            ["finished_at"],
            ["tenant_id", "instance_id", "node_key", "assignee", "kind", "created_at"],
            _COMPLETED,
        ),
        (
            ["finished_at"],
            [
                "tenant_id",
                "definition_key",
                "instance_id",
                "node_key",
                "assignee",
                "kind",
                "created_at",
            ],
            _COMPLETED,
        ),
    ),
    (
        # keyed by definition and node now (was instance_id) and human kinds
        # only: the backlog group-by reads it in order as an index-only scan
        # (the planner preferred a heap scan over ix_workflow_tasks_open_instance
        # while the kind filter was not in the predicate)
        "ix_workflow_tasks_pending",
        (["instance_id"], ["tenant_id", "node_key", "assignee", "kind"], _PENDING),
        (["definition_key", "node_key"], ["tenant_id", "assignee", "kind"], _PENDING_HUMAN),
    ),
    (
        "ix_workflow_tasks_due",
        (["due_at"], ["tenant_id", "instance_id", "node_key", "assignee"], _PENDING_DUE),
        (
            ["due_at"],
            ["tenant_id", "definition_key", "instance_id", "node_key", "assignee"],
            _PENDING_DUE,
        ),
    ),
]


def _create(name: str, shape: Shape) -> None:
    columns, include, where = shape
    op.create_index(
        name,
        "workflow_tasks",
        columns,
        postgresql_include=include,
        postgresql_where=sa.text(where),
        sqlite_where=sa.text(where),
    )


def upgrade() -> None:
    # the rebuilt indexes go first, so SQLite's table copy below never has
    # to carry a partial index it would have to re-read
    for name, *_rest in _INDEXES:
        op.drop_index(name, table_name="workflow_tasks")
    with op.batch_alter_table("workflow_tasks", schema=None) as batch_op:
        batch_op.add_column(sa.Column("definition_key", sa.String(length=64), nullable=True))
    op.execute(
        "UPDATE workflow_tasks SET definition_key = ("
        "SELECT workflow_instances.definition_key FROM workflow_instances "
        "WHERE workflow_instances.id = workflow_tasks.instance_id)"
    )
    with op.batch_alter_table("workflow_tasks", schema=None) as batch_op:
        batch_op.alter_column("definition_key", existing_type=sa.String(length=64), nullable=False)
    for name, _before, after in _INDEXES:
        _create(name, after)


def downgrade() -> None:
    for name, *_rest in _INDEXES:
        op.drop_index(name, table_name="workflow_tasks")
    with op.batch_alter_table("workflow_tasks", schema=None) as batch_op:
        batch_op.drop_column("definition_key")
    for name, before, _after in _INDEXES:
        _create(name, before)
