"""The definition key on tasks (SPEC O-14): ``workflow_tasks.definition_key``
(NOT NULL), copied from the task's instance — backfilled here, set by the
engine when it creates a task — and the three analytics task indexes
(``ix_workflow_tasks_finished``, ``ix_workflow_tasks_pending``,
``ix_workflow_tasks_due``) rebuilt to include it, so the node-bottleneck
panel groups by definition and node from the index alone, without joining
``workflow_instances``.

Revision ID: 0011
Revises: 0010
Create Date: 2026-12-01 12:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None

_COMPLETED = "status = 'completed'"
_PENDING = "status = 'pending'"
_PENDING_DUE = "status = 'pending' AND due_at IS NOT NULL"

Shape = tuple[list[str], list[str]]  # key columns, INCLUDE columns

# name, partial predicate, shape before 0011, shape after
_INDEXES: list[tuple[str, str, Shape, Shape]] = [
    (
        "ix_workflow_tasks_finished",
        _COMPLETED,
        (
            ["finished_at"],
            ["tenant_id", "instance_id", "node_key", "assignee", "kind", "created_at"],
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
        ),
    ),
    (
        # keyed by definition and node now (was instance_id): the backlog
        # group-by reads it in order, and a definition filter is its Index Cond
        "ix_workflow_tasks_pending",
        _PENDING,
        (["instance_id"], ["tenant_id", "node_key", "assignee", "kind"]),
        (["definition_key", "node_key"], ["tenant_id", "assignee", "kind"]),
    ),
    (
        "ix_workflow_tasks_due",
        _PENDING_DUE,
        (["due_at"], ["tenant_id", "instance_id", "node_key", "assignee"]),
        (["due_at"], ["tenant_id", "definition_key", "instance_id", "node_key", "assignee"]),
    ),
]


def _create(name: str, where: str, shape: Shape) -> None:
    columns, include = shape
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
    for name, where, _before, after in _INDEXES:
        _create(name, where, after)


def downgrade() -> None:
    for name, *_rest in _INDEXES:
        op.drop_index(name, table_name="workflow_tasks")
    with op.batch_alter_table("workflow_tasks", schema=None) as batch_op:
        batch_op.drop_column("definition_key")
    for name, where, before, _after in _INDEXES:
        _create(name, where, before)
