"""Trigram indexes for the job keyword filter (issue 17 item 7, SPEC L-24).

``lower(last_error) LIKE '%…%' OR lower(type) LIKE '%…%'`` (see
``flowledger.db.like`` and ``ops.jobs.filters``) is served on PostgreSQL by
two GIN ``gin_trgm_ops`` indexes combined in a BitmapOr:
``ix_workflow_jobs_last_error_trgm`` and ``ix_workflow_jobs_type_trgm``
(extension ``pg_trgm``). SQLite has no trigram index: the migration skips
them there, and the filter stays a scan.

Revision ID: 0012
Revises: 0011
Create Date: 2026-12-01 11:45:00
"""

from __future__ import annotations

from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

INDEXES = {
    "ix_workflow_jobs_last_error_trgm": "last_error",
    "ix_workflow_jobs_type_trgm": "type",
}


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute("CREATE EXTENSION IF NOT EXISTS pg_trgm")
    for name, column in INDEXES.items():
        op.execute(
            f"CREATE INDEX IF NOT EXISTS {name} ON workflow_jobs "
            f"USING gin (lower({column}) gin_trgm_ops)"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    for name in INDEXES:
        op.execute(f"DROP INDEX IF EXISTS {name}")
