"""The rescuer behind the ``workflow-jobs-drain`` system task (SPEC L-20):
running jobs whose lease expired or whose execution deadline passed go back
to pending with backoff, or to dead when their attempts are exhausted or an
unsafe external call's outcome is unknown; a job whose dying attempt had
already committed a step receipt (only its settlement was lost) is replayed
at once, once even past its budget; and the pools that have due work
get their wake hints again. It never runs a handler."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import exists, func, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db import wake
from flowledger.db.schema import workflow_job_effects as effects
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.backoff import backoff_ms
from flowledger.ledger.fingerprint import fingerprint
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED, AttemptStatus, JobStatus

RESCUE_BATCH = 500


@dataclass
class RescueReport:
    retried: list[int] = field(default_factory=list)
    dead: list[int] = field(default_factory=list)
    hinted_pools: list[str] = field(default_factory=list)


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
    ).where(
        jobs.c.status == "running",
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


async def jobs_rescue(
    conn: AsyncConnection, *, now: datetime, limit: int = RESCUE_BATCH
) -> RescueReport:
    """Reclaim expired running jobs and republish hints, in the caller's transaction."""
    report = RescueReport()
    rows = (
        await conn.execute(
            _expired(now).order_by(jobs.c.id).limit(limit).with_for_update(skip_locked=True)
        )
    ).all()
    await _reclaim(conn, rows, now=now, report=report)
    pools = (
        (
            await conn.execute(
                select(jobs.c.pool)
                .where(jobs.c.status == "pending", jobs.c.run_at <= now)
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


async def jobs_reclaim(conn: AsyncConnection, job_ids: list[int], *, now: datetime) -> RescueReport:
    """Reclaim exactly the listed jobs, those of them still running with an
    expired lease or a passed deadline, as the drain would (targeted recovery,
    SPEC O-18). The caller holds their instance locks (L-13); the job rows are
    locked here. Publishes the wake hint of each reclaimed job's pool."""
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
            await conn.execute(select(jobs.c.pool).where(jobs.c.id.in_(report.retried)).distinct())
        ).scalars()
        for pool in sorted(pools):
            await wake.hint(conn, pool)
            report.hinted_pools.append(pool)
    return report
