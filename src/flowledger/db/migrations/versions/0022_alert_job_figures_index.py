"""The alert metrics' job figures per tenant (issue 34 item 3, SPEC O-22):
``ix_workflow_jobs_live_tenant`` on ``workflow_jobs`` (tenant_id, status,
run_at) INCLUDE (lease_until, execution_deadline) WHERE status IN
('pending', 'running'). A rule on one tenant's backlog or stuck jobs
counted that tenant's rows by reading every running job of every tenant
from the heap; over this index each figure is an index-only range of the
tenant's own rows. It holds only live jobs, never the history.

Dead jobs are left out on purpose: with them, the planner took this index
for the all-tenant dead count too (a bitmap AND with
``ix_workflow_jobs_replayable``, lossy at the default work_mem: 1.7 s
instead of an index-only scan of ``ix_workflow_jobs_status_type``). Both
backends (SQLite ignores the INCLUDE).

Revision ID: 0022
Revises: 0021
Create Date: 2026-12-06 23:30:00
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0022"
down_revision = "0021"
branch_labels = None
depends_on = None

_LIVE = sa.text("status IN ('pending', 'running')")


def upgrade() -> None:
    op.create_index(
        "ix_workflow_jobs_live_tenant",
        "workflow_jobs",
        ["tenant_id", "status", "run_at"],
        unique=False,
        postgresql_include=["lease_until", "execution_deadline"],
        postgresql_where=_LIVE,
        sqlite_where=_LIVE,
        # the volume database got it by hand (CREATE INDEX CONCURRENTLY, the
        # same definition) to measure it before this migration existed
        if_not_exists=True,
    )


def downgrade() -> None:
    op.drop_index(
        "ix_workflow_jobs_live_tenant",
        table_name="workflow_jobs",
        postgresql_where=_LIVE,
        sqlite_where=_LIVE,
    )
