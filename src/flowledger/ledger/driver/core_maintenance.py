"""The shared Core implementation of ledger maintenance: the rescuer behind
the ``workflow-jobs-drain`` system task (SPEC L-20) and targeted recovery
(O-18), fresh wake hints for overdue jobs (L-8), and retention of settled
jobs (O-20).

Rescue: running jobs whose lease expired or whose execution deadline passed
go back to pending with backoff, or to dead when their attempts are exhausted
or an unsafe external call's outcome is unknown; a job whose dying attempt
had already committed a step receipt (only its settlement was lost) is
replayed at once, once even past its budget; the pools that have due work get
their wake hints again. It never runs a handler.

Retention never removes a job that is pending, running, paused, failed or
dead (only ``succeeded`` and ``canceled`` qualify), nor any job of an
instance that is running or suspended or has an unresolved compensation
ticket. The batch is selected ``FOR UPDATE`` (a no-op on SQLite, whose writer
lock already excludes everyone), rows in id order, so a job an operator is
retrying at this moment is waited for and its new status re-checked; not
``SKIP LOCKED``, so the preview equals the run. Batches are keyset-paged by
(``updated_at``, ``id``) along ``ix_workflow_jobs_settled``, so a pass reads
expired jobs only and its last batch stops at the cut-off. A batch removes
its jobs' attempts and receipts explicitly, then the jobs, in one
transaction: a crash leaves the batch whole or untouched, and no attempt or
receipt outlives its job (on PostgreSQL no foreign key cascades:
:mod:`flowledger.db.job_history_keys`).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    BigInteger,
    any_,
    delete,
    exists,
    func,
    literal,
    literal_column,
    or_,
    select,
    tuple_,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.elements import ColumnElement

from flowledger.db import wake
from flowledger.db.compensation_schema import workflow_compensations as tickets
from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.history_partitions import CLOCK_MARGIN
from flowledger.db.schema import workflow_job_effects as effects
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.backoff import backoff_ms
from flowledger.ledger.fingerprint import fingerprint
from flowledger.ledger.models import JobPurge, PurgeCursor, RescueReport
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED, AttemptStatus, InstanceStatus, JobStatus

RESCUE_BATCH = 500
PURGEABLE_JOB_STATUSES = (JobStatus.SUCCEEDED.value, JobStatus.CANCELED.value)
ACTIVE_INSTANCE_STATUSES = (InstanceStatus.RUNNING.value, InstanceStatus.SUSPENDED.value)
# an attempt starts when its job is claimed, and the claim sets the job's
# ``updated_at`` to the same instant, which later changes only move forward:
# every attempt of a job started before the job's ``updated_at``, and after
# its ``created_at`` (a job is claimed once it exists). Retention looks for a
# batch's attempts only between the batch's earliest ``created_at`` minus
# this slack and its latest ``updated_at`` plus it (clocks of different
# nodes, a backdated demo job): the day partitions of that range, not every
# partition of the history (issue 34 item 2).
ATTEMPT_START_SLACK = CLOCK_MARGIN


def instance_protected(instance_id: Any) -> ColumnElement[bool]:
    """True when the instance ``instance_id`` is running or suspended or has
    an unresolved compensation ticket: nothing of it may be removed.

    The instance's status is a correlated scalar subquery (no instance: not
    active), which PostgreSQL runs as one primary-key probe per row: an
    ``EXISTS`` under the ``OR`` of :func:`purgeable_jobs` was planned as a
    hashed subplan of every running or suspended instance, rebuilt for every
    retention batch (issue 34: 86,000 instances on the volume database)."""
    status = select(instances.c.status).where(instances.c.id == instance_id).scalar_subquery()
    active = func.coalesce(status, "").in_(ACTIVE_INSTANCE_STATUSES)
    ticket = exists().where(tickets.c.instance_id == instance_id, tickets.c.status == "pending")
    return or_(active, ticket)


def purgeable_jobs(before: datetime) -> list[ColumnElement[bool]]:
    """The conditions of a job retention may remove: settled as succeeded or
    canceled before ``before``, of no protected instance. The statuses are
    literals, not parameters, so that a generic plan still matches the
    partial index ``ix_workflow_jobs_settled``."""
    return [
        jobs.c.status.in_([literal_column(f"'{status}'") for status in PURGEABLE_JOB_STATUSES]),
        jobs.c.updated_at < before,
        or_(jobs.c.instance_id.is_(None), ~instance_protected(jobs.c.instance_id)),
    ]


def _expired(now: datetime) -> Any:
    """Running jobs whose lease is missing or expired or whose execution
    deadline passed, with what deciding their next state needs."""
    # a step receipt written by the attempt that died: its work is committed,
    # only the settlement was lost. The attempt's start is correlated with the
    # job being rescued (without ``correlate`` the subquery, nested in the
    # EXISTS, took the newest attempt start of *any* job: issue 17 item 11)
    attempt_started = (
        select(func.max(executions.c.started_at))
        .where(executions.c.job_id == jobs.c.id, executions.c.generation == jobs.c.generation)
        .correlate(jobs)
        .scalar_subquery()
    )
    committed = exists().where(
        effects.c.job_id == jobs.c.id,
        effects.c.generation == jobs.c.generation,
        effects.c.created_at >= attempt_started,
    )
    return select(
        jobs.c.id,
        jobs.c.attempts,
        jobs.c.max_attempts,
        jobs.c.side_effect_at,
        jobs.c.lease_until,
        jobs.c.execution_deadline,
        committed.label("committed"),
    ).where(*_expiry(now))


def _expiry(now: datetime) -> tuple[Any, ...]:
    """Running with a lease missing or expired or a deadline passed: on
    PostgreSQL every column it reads is in ``ix_workflow_jobs_running_lease``
    (key ``lease_until``, included ``execution_deadline`` and ``id``), so the
    ids of the expired jobs are an index-only scan of the running jobs."""
    return (
        jobs.c.status == JobStatus.RUNNING.value,
        or_(
            jobs.c.lease_until.is_(None),
            jobs.c.lease_until < now,
            jobs.c.execution_deadline <= now,
        ),
    )


async def _reclaim(
    conn: AsyncConnection, rows: Sequence[Any], *, now: datetime, report: RescueReport
) -> None:
    for row in rows:
        deadline_passed = row.execution_deadline is not None and row.execution_deadline <= now
        error = (
            "execution deadline passed"
            if deadline_passed
            else "lease expired: the executor stopped renewing"
        )
        code = "deadline_exceeded" if deadline_passed else "lease_expired"
        values: dict[str, Any] = {}
        if row.side_effect_at is not None:
            status, code = JobStatus.DEAD, EXTERNAL_OUTCOME_UNCONFIRMED
        elif row.committed and row.attempts <= row.max_attempts:
            # replay at once, even past the budget (once: the replay's claim
            # makes attempts exceed it); the re-run finds the receipts
            status = JobStatus.PENDING
            values = {"run_at": now}
        elif row.attempts >= row.max_attempts:
            status = JobStatus.DEAD
            values["last_error_code"] = "attempts_exhausted"
        else:
            status = JobStatus.PENDING
            values = {"run_at": now + timedelta(milliseconds=backoff_ms(row.attempts))}
        await conn.execute(
            update(executions)
            .where(executions.c.job_id == row.id, executions.c.status == "running")
            .values(
                status=AttemptStatus.FAILED,
                finished_at=now,
                error=error,
                error_code=code,
                error_fingerprint=fingerprint(error),
            )
        )
        await conn.execute(
            update(jobs)
            .where(jobs.c.id == row.id)
            .values(
                status=status,
                last_error=error,
                last_error_fingerprint=fingerprint(error),
                **{"last_error_code": code, **values},
                updated_at=now,
                lease_token=None,
                lease_until=None,
                lease_owner=None,
            )
        )
        (report.dead if status is JobStatus.DEAD else report.retried).append(row.id)


class MaintenanceCore:
    """Rescue, targeted reclaim, wake hints and retention in portable Core."""

    async def jobs_rescue(
        self, conn: AsyncConnection, *, now: datetime, limit: int = RESCUE_BATCH
    ) -> RescueReport:
        report = RescueReport()
        # the expired ids first, index-only; the rows (and their attempt
        # receipts) only for those. Reading every running job's row to test
        # its lease was a heap page per running job: on the volume database
        # (issue 34 item 4) 2,600-8,700 scattered pages, 0.1 s alone and up
        # to 6 s at a worker's start, beside its first claims
        ids = (
            (
                await conn.execute(
                    select(jobs.c.id).where(*_expiry(now)).order_by(jobs.c.id).limit(limit)
                )
            )
            .scalars()
            .all()
        )
        if ids:
            rows = (
                await conn.execute(
                    _expired(now)
                    .where(jobs.c.id.in_(ids))
                    .order_by(jobs.c.id)
                    .with_for_update(skip_locked=True)
                )
            ).all()
            await _reclaim(conn, rows, now=now, report=report)
        pools = (
            (
                await conn.execute(
                    select(jobs.c.pool)
                    .where(jobs.c.status == JobStatus.PENDING.value, jobs.c.run_at <= now)
                    .distinct()
                )
            )
            .scalars()
            .all()
        )
        for pool in sorted(pools):
            await wake.hint(conn, pool)
            report.hinted_pools.append(pool)
        return report

    async def jobs_reclaim(
        self, conn: AsyncConnection, job_ids: list[int], *, now: datetime
    ) -> RescueReport:
        """Those of the listed jobs still running with an expired lease or a
        passed deadline, as the drain would. The caller holds their instance
        locks (L-13); the job rows are locked here."""
        report = RescueReport()
        if not job_ids:
            return report
        rows = (
            await conn.execute(
                _expired(now).where(jobs.c.id.in_(job_ids)).order_by(jobs.c.id).with_for_update()
            )
        ).all()
        await _reclaim(conn, rows, now=now, report=report)
        if report.retried:
            pools = (
                await conn.execute(
                    select(jobs.c.pool).where(jobs.c.id.in_(report.retried)).distinct()
                )
            ).scalars()
            for pool in sorted(pools):
                await wake.hint(conn, pool)
                report.hinted_pools.append(pool)
        return report

    async def jobs_wake(
        self, conn: AsyncConnection, job_ids: list[int], *, now: datetime
    ) -> list[int]:
        """Nothing about the jobs changes; the hint only makes idle pools
        claim now. Returns the ids still pending and due."""
        if not job_ids:
            return []
        rows = (
            await conn.execute(
                select(jobs.c.id, jobs.c.pool).where(
                    jobs.c.id.in_(job_ids),
                    jobs.c.status == JobStatus.PENDING.value,
                    jobs.c.run_at <= now,
                )
            )
        ).all()
        for pool in sorted({row.pool for row in rows}):
            await wake.hint(conn, pool)
        return [int(row.id) for row in rows]

    async def jobs_purge_count(self, conn: AsyncConnection, *, before: datetime) -> dict[str, int]:
        eligible = select(jobs.c.id).where(*purgeable_jobs(before)).scalar_subquery()
        row = (
            await conn.execute(
                select(
                    select(func.count()).where(*purgeable_jobs(before)).scalar_subquery(),
                    select(func.count())
                    .select_from(executions)
                    .where(
                        executions.c.job_id.in_(eligible),
                        executions.c.started_at < before + ATTEMPT_START_SLACK,
                    )
                    .scalar_subquery(),
                    select(func.count())
                    .select_from(effects)
                    .where(effects.c.job_id.in_(eligible))
                    .scalar_subquery(),
                )
            )
        ).one()
        return {
            "workflow_jobs": row[0],
            "workflow_job_executions": row[1],
            "workflow_job_effects": row[2],
        }

    async def jobs_purge_batch(
        self,
        conn: AsyncConnection,
        *,
        before: datetime,
        after: PurgeCursor | None = None,
        limit: int = 1000,
    ) -> JobPurge:
        """Up to ``limit`` purgeable jobs past ``after`` in (``updated_at``,
        ``id``) order, in the caller's transaction: their attempts and
        receipts first, then the jobs."""
        stmt = select(jobs.c.id, jobs.c.created_at, jobs.c.updated_at)
        stmt = stmt.where(*purgeable_jobs(before))
        if after is not None:
            moment = literal(after[0], jobs.c.updated_at.type)  # typed: SQLite stores text
            stmt = stmt.where(
                tuple_(jobs.c.updated_at, jobs.c.id) > tuple_(moment, literal(after[1]))
            )
        stmt = stmt.order_by(jobs.c.updated_at, jobs.c.id).limit(limit).with_for_update(of=jobs)
        rows = (await conn.execute(stmt)).all()
        if not rows:
            return JobPurge(None, 0, 0, 0)
        ids = [int(row.id) for row in rows]
        latest = rows[-1].updated_at
        earliest = min(row.created_at for row in rows)
        if conn.dialect.name == "postgresql":
            # planned with this batch's ids and range (this transaction only):
            # psycopg prepares a statement run five times, and PostgreSQL's
            # generic plan, made for an unknown array of a few ids, read the
            # started_at index over the whole range (158 ms against 17 ms)
            await conn.exec_driver_sql("SET LOCAL plan_cache_mode = force_custom_plan")

        def among(column: ColumnElement[Any]) -> ColumnElement[bool]:
            # PostgreSQL: one array parameter; an IN list of 1,000 parameters
            # cost ~20 ms a statement to bind, parse and plan (issue 34)
            if conn.dialect.name == "postgresql":
                return column == any_(literal(ids, ARRAY(BigInteger())))
            return column.in_(ids)

        attempts = await conn.execute(
            delete(executions).where(
                among(executions.c.job_id),
                executions.c.started_at >= earliest - ATTEMPT_START_SLACK,
                executions.c.started_at < latest + ATTEMPT_START_SLACK,
            )
        )
        receipts = await conn.execute(delete(effects).where(among(effects.c.job_id)))
        removed = await conn.execute(delete(jobs).where(among(jobs.c.id)))
        return JobPurge((latest, ids[-1]), removed.rowcount, attempts.rowcount, receipts.rowcount)
