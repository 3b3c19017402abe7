"""The keyword-search indexes of ``workflow_jobs`` (issue 17 item 7; migrations
0012, 0015): GIN trigram indexes on ``lower(last_error)`` (of the jobs that
have one) and ``lower(type)``,
PostgreSQL only (``pg_trgm``; created before the tables by ``create_all``).
SQLite gets neither; its keyword filter is a scan."""

from __future__ import annotations

from sqlalchemy import DDL, Index, event, func

from flowledger.db.schema import metadata
from flowledger.db.schema import workflow_jobs as jobs

event.listen(
    metadata,
    "before_create",
    DDL("CREATE EXTENSION IF NOT EXISTS pg_trgm").execute_if(dialect="postgresql"),  # type: ignore[no-untyped-call]
)

# only the jobs that have an error (migration 0015): a keyword's ``LIKE`` on
# lower(last_error) implies it is not null, so the search still uses it, and
# a job's every write without an error (insert, claim, settlement: three GIN
# insertions per job) leaves it alone
last_error_trgm = Index(
    "ix_workflow_jobs_last_error_trgm",
    func.lower(jobs.c.last_error).label("lower_last_error"),
    postgresql_using="gin",
    postgresql_ops={"lower_last_error": "gin_trgm_ops"},
    postgresql_where=jobs.c.last_error.isnot(None),
).ddl_if(dialect="postgresql")
type_trgm = Index(
    "ix_workflow_jobs_type_trgm",
    func.lower(jobs.c.type).label("lower_type"),
    postgresql_using="gin",
    postgresql_ops={"lower_type": "gin_trgm_ops"},
).ddl_if(dialect="postgresql")
