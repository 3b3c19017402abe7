"""The fence of a job step (SPEC L-13, L-14) as SQL constructs: the job row
is locked only while its executor still owns it (same generation and lease
token, running, deadline not reached), and the step's receipt is read in the
same statement. The ledger's drivers send it as
``job_lock_fenced_receipt``; a store that must lock its own rows *before*
the job's (the engine's instance row, L-13) and wants both in one statement
builds its statement with :func:`lock_fenced_after` — the ledger's part of
that statement is this module's, named, and nothing else of the ledger's is
spliced into it.

The fence's status test is :data:`STILL_RUNNING`, ``status IS NOT DISTINCT
FROM 'running'`` (:data:`STILL_RUNNING_SQL` in the hand-written PostgreSQL
statements): equal to ``status = 'running'`` for a column that is never
NULL, but no index searches it and it proves no partial index's predicate,
so every fenced write finds its jobs by primary key alone (issue 32).
Written ``=``, it let PostgreSQL's planner choose
``ix_workflow_jobs_running_lease`` (partial, on running jobs) or
``ix_workflow_jobs_status_type`` and read, per job, the entries of every
job claimed since the last VACUUM — settled jobs' entries stay there as
dead entries: on a never-analyzed table (the bench host, and a new
installation before autovacuum's first ANALYZE) in every single-job
statement, and with few running jobs counted in the batch settlement
(5,198 entries to settle one job late in a 5,000-job drain).

Built once, the values bound per call (:func:`fence_params`). Only the job
row is locked (``FOR UPDATE OF``; on SQLite ``FOR UPDATE`` compiles to
nothing: ``BEGIN IMMEDIATE`` already excludes writers). ``effects.id``
tells a missing receipt from one whose result is JSON null."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, FromClause, Select, and_, bindparam, select, true

from flowledger.db.schema import workflow_job_effects as effects
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.models import Fence
from flowledger.states import JobStatus

JOB_WITH_RECEIPT = jobs.outerjoin(
    effects,
    and_(
        effects.c.operation_key == bindparam("operation_key"),
        effects.c.step_key == bindparam("step_key"),
    ),
)
#: the job is still running, in a form no index serves (module docstring)
STILL_RUNNING = jobs.c.status.is_not_distinct_from(JobStatus.RUNNING.value)
#: the same in the ledger's PostgreSQL statements, whose job row is ``j``
STILL_RUNNING_SQL = f"j.status IS NOT DISTINCT FROM '{JobStatus.RUNNING.value}'"
FENCE_HOLDS = (
    jobs.c.id == bindparam("job_id"),
    jobs.c.generation == bindparam("generation"),
    jobs.c.lease_token == bindparam("lease_token"),
    STILL_RUNNING,
    jobs.c.execution_deadline > bindparam("now"),
)
# the parameter names the fence binds (a store's own must differ)
FENCE_NAMES = ("operation_key", "step_key", "job_id", "generation", "lease_token", "now")
# the labels of the fence's own columns in a lock_fenced_after row
FENCED_JOB_ID, RECEIPT_ID, RECEIPT_RESULT = "fence_job_id", "fence_receipt_id", "fence_result"
# the prior receipt of the step, for a write that must not run when it exists
PRIOR_RECEIPT = effects.alias("prior_receipt")
NO_PRIOR_RECEIPT = ~(
    select(PRIOR_RECEIPT.c.id)
    .where(
        PRIOR_RECEIPT.c.operation_key == bindparam("operation_key"),
        PRIOR_RECEIPT.c.step_key == bindparam("step_key"),
    )
    .exists()
)


def fence_params(fence: Fence, operation_key: str, step_key: str, now: datetime) -> dict[str, Any]:
    """The bound values of :data:`FENCE_HOLDS` and :data:`JOB_WITH_RECEIPT`."""
    return {
        "operation_key": operation_key,
        "step_key": step_key,
        "job_id": fence.job_id,
        "generation": fence.generation,
        "lease_token": fence.lease_token,
        "now": now,
    }


def lock_fenced_after(sources: list[FromClause], columns: list[ColumnElement[Any]]) -> Select[Any]:
    """The fenced job lock and receipt read with each of ``sources`` (CTEs
    of the caller's: its row locks, its guarded writes) LEFT JOINed ``ON
    true`` — evaluated as the join runs, so a source's rows are locked
    before the job row, which is locked only as the joined row leaves the
    join (L-13's order) — returning ``columns`` (of the sources, labelled
    apart from the fence's) after :data:`FENCED_JOB_ID`,
    :data:`RECEIPT_ID` and :data:`RECEIPT_RESULT`. No row: the fence no
    longer holds."""
    source: FromClause = JOB_WITH_RECEIPT
    for joined in sources:
        source = source.outerjoin(joined, true())
    return (
        select(
            jobs.c.id.label(FENCED_JOB_ID),
            effects.c.id.label(RECEIPT_ID),
            effects.c.result.label(RECEIPT_RESULT),
            *columns,
        )
        .select_from(source)
        .where(*FENCE_HOLDS)
        .with_for_update(of=jobs)
    )
