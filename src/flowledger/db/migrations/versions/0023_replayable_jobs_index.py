"""Replay preview index (SPEC L-24, issue 34 item 3):
``ix_workflow_jobs_replayable`` on ``workflow_jobs`` (created_at, id),
dead and failed jobs only, on both backends.

A replay takes the oldest matching dead / failed jobs first; without this
index its preview sorted every dead and failed job by ``created_at`` to show
the first ten (on the volume benchmark's 12M jobs, 251,264 of them: 1.2 s,
a bitmap heap scan of 45,000 pages). With it the sample is the index's
first entries. Writes: one entry when a job dies or fails, removed when it
is retried or skipped.

Revision ID: 0023
Revises: 0022
Create Date: 2026-12-06 23:20:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0023"
down_revision = "0022"
branch_labels = None
depends_on = None

_DEAD_OR_FAILED = "status IN ('dead', 'failed')"


def upgrade() -> None:
    op.create_index(
        "ix_workflow_jobs_replayable",
        "workflow_jobs",
        ["created_at", "id"],
        postgresql_where=sa.text(_DEAD_OR_FAILED),
        sqlite_where=sa.text(_DEAD_OR_FAILED),
        if_not_exists=True,  # a large database may have built it CONCURRENTLY first
    )


def downgrade() -> None:
    op.drop_index("ix_workflow_jobs_replayable", table_name="workflow_jobs")
