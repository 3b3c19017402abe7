"""The job keyword filter's ``last_error`` trigram index covers only the jobs
that have an error (issue 15 item 2; issue 17 item 7, SPEC L-24).

``ix_workflow_jobs_last_error_trgm`` (GIN, ``gin_trgm_ops`` on
``lower(last_error)``) took an entry for every version of every job row,
null errors included: every insert, claim and settlement of a job that
never failed wrote into it. Rebuilt ``WHERE last_error IS NOT NULL``: the
keyword's ``lower(last_error) LIKE '%…%'`` implies that predicate, so the
BitmapOr with the type index is unchanged (the search's plans stay), and a
job without an error never touches it. PostgreSQL only, as 0012.

Revision ID: 0015
Revises: 0014
Create Date: 2026-12-04 21:40:00
"""

from __future__ import annotations

from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None

_NAME = "ix_workflow_jobs_last_error_trgm"
_CREATE = f"CREATE INDEX {_NAME} ON workflow_jobs USING gin (lower(last_error) gin_trgm_ops)"


def upgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"DROP INDEX IF EXISTS {_NAME}")
    op.execute(f"{_CREATE} WHERE last_error IS NOT NULL")


def downgrade() -> None:
    if op.get_bind().dialect.name != "postgresql":
        return
    op.execute(f"DROP INDEX IF EXISTS {_NAME}")
    op.execute(_CREATE)
