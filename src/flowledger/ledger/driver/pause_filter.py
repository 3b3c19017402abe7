"""The claim's paused-scope filter (issue 31 item 3), one definition for the
three claims (PostgreSQL's statement, SQLite's fast path, the portable Core
plan) and the pool's next due time.

A pending job is claimable only while neither its pool nor its type has a
row in ``workflow_job_pauses``. The filter is part of the claim statement
itself, so it holds across any number of worker processes with no cache to
refresh: a claim statement that starts after a pause committed never takes a
job of the paused scope (a claim statement already running when the pause
commits may still finish taking one — it claimed before the pause, as a
claim that had just committed would have). Both subqueries are uncorrelated:
PostgreSQL evaluates each once per statement into a hashed set (SQLite: an
ephemeral index), so the added cost is two reads of a table of a few rows,
plus — only while a type is paused — stepping over that type's due jobs in
the claim's index walk.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import and_, select

from flowledger.db.schema import workflow_job_pauses as pauses
from flowledger.db.schema import workflow_jobs as jobs

__all__ = ["UNPAUSED_SQL", "unpaused"]

UNPAUSED_SQL = (
    "type NOT IN (SELECT value FROM workflow_job_pauses WHERE scope = 'job_type') "
    "AND pool NOT IN (SELECT value FROM workflow_job_pauses WHERE scope = 'pool')"
)


def unpaused() -> Any:
    """:data:`UNPAUSED_SQL` as a Core expression over ``workflow_jobs``."""
    return and_(
        jobs.c.type.not_in(select(pauses.c.value).where(pauses.c.scope == "job_type")),
        jobs.c.pool.not_in(select(pauses.c.value).where(pauses.c.scope == "pool")),
    )
