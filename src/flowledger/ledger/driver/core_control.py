"""The shared Core implementation of control from outside the executor:
pause and resume with an instance (SPEC L-18), cleanup when an instance ends
(L-22), the advancement cancel of a force jump (O-4, O-6), manual retry and
cancel (L-5, L-9, L-24). Each bumps the generation so any executor still
holding the old one loses the right to write; each selects its rows by the
sources :data:`~flowledger.states.JOB_TRANSITIONS` allows. All run in the
caller's transaction, after the caller has locked the instance row (L-13);
a writer of several job rows locks them in id order first
(:func:`~flowledger.ledger.driver.plans.locked_in_id_order`)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db import wake
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import InvalidStateError, NotFoundError
from flowledger.ledger.driver.plans import CLEAR_LEASE, locked_in_id_order
from flowledger.ledger.fingerprint import fingerprint
from flowledger.ledger.models import new_key
from flowledger.states import (
    EXTERNAL_OUTCOME_UNCONFIRMED,
    AttemptStatus,
    JobStatus,
    JobTransition,
    transition_sources,
)

_SUSPENDED_UNSAFE = "instance suspended during an unsafe external call"


def _sources(transition: JobTransition) -> list[str]:
    return sorted(s.value for s in transition_sources(transition))


# Built once with bound parameters (issue 15 item 4): an instance's cleanup
# runs them in every step that ends an instance, and building them per call
# cost more Python than running them. An UPDATE's other SET columns come
# from the parameters' keys.
_FINISH_RUNNING_ATTEMPTS = update(executions).where(
    executions.c.job_id.in_(bindparam("b_job_ids", expanding=True)),
    executions.c.status == "running",
)
_LOCK_INSTANCE_JOBS = (
    select(
        jobs.c.id,
        jobs.c.status,
        jobs.c.run_at,
        jobs.c.attempts,
        jobs.c.side_effect_at,
        jobs.c.pool,
        jobs.c.paused_remaining_ms,
    )
    .where(
        jobs.c.instance_id == bindparam("b_instance_id"),
        jobs.c.type.in_(bindparam("b_types", expanding=True)),
        jobs.c.status.in_(bindparam("b_statuses", expanding=True)),
    )
    .order_by(jobs.c.id)
    .with_for_update()
)
_CANCEL_JOBS = (
    update(jobs)
    .where(jobs.c.id.in_(bindparam("b_ids", expanding=True)))
    .values(generation=jobs.c.generation + 1)
)


async def finish_running_attempts(
    conn: AsyncConnection,
    job_ids: list[int],
    *,
    status: AttemptStatus,
    error: str,
    now: datetime,
    error_code: str | None = None,
) -> None:
    """Close the running attempt rows of ``job_ids`` with ``status``."""
    if job_ids:
        await conn.execute(
            _FINISH_RUNNING_ATTEMPTS,
            {
                "b_job_ids": list(job_ids),
                "status": status,
                "finished_at": now,
                "error": error,
                "error_code": error_code,
                "error_fingerprint": fingerprint(error),
            },
        )


async def _lock_instance_jobs(
    conn: AsyncConnection, instance_id: int, types: Collection[str], statuses: list[str]
) -> list[Any]:
    params = {"b_instance_id": instance_id, "b_types": list(types), "b_statuses": statuses}
    return list((await conn.execute(_LOCK_INSTANCE_JOBS, params)).all())


async def _lock_job(conn: AsyncConnection, job_id: int) -> Any:
    row = (
        await conn.execute(
            select(jobs.c.id, jobs.c.status, jobs.c.pool, jobs.c.operation_key, jobs.c.payload)
            .where(jobs.c.id == job_id)
            .with_for_update()
        )
    ).first()
    if row is None:
        raise NotFoundError(f"job {job_id} not found", field="id")
    return row


async def _cancel_ids(conn: AsyncConnection, ids: list[int], *, now: datetime, reason: str) -> None:
    await finish_running_attempts(conn, ids, status=AttemptStatus.CANCELED, error=reason, now=now)
    await conn.execute(
        _CANCEL_JOBS,
        {
            "b_ids": list(ids),
            "status": JobStatus.CANCELED,
            "cancel_reason": reason,
            "updated_at": now,
            **CLEAR_LEASE,
        },
    )


class ControlCore:
    """Retry, cancel, pause, resume and instance cleanup in portable Core."""

    async def jobs_pause(
        self, conn: AsyncConnection, instance_id: int, *, types: Collection[str], now: datetime
    ) -> list[int]:
        """Pause the instance's jobs of ``types`` (the caller's policy: the
        engine's pausable types, SPEC L-18). Keep each paused job's remaining
        wait; a running job that already started an unsafe external call goes
        to the pending-confirmation dead letter instead. Returns the paused ids."""
        rows = await _lock_instance_jobs(conn, instance_id, types, _sources(JobTransition.PAUSE))
        paused: list[int] = []
        for row in rows:
            if row.status == "running" and row.side_effect_at is not None:
                await conn.execute(
                    update(jobs)
                    .where(jobs.c.id == row.id)
                    .values(
                        status=JobStatus.DEAD,
                        generation=jobs.c.generation + 1,
                        updated_at=now,
                        last_error=_SUSPENDED_UNSAFE,
                        last_error_fingerprint=fingerprint(_SUSPENDED_UNSAFE),
                        last_error_code=EXTERNAL_OUTCOME_UNCONFIRMED,
                        **CLEAR_LEASE,
                    )
                )
                await finish_running_attempts(
                    conn,
                    [row.id],
                    status=AttemptStatus.FAILED,
                    error="instance suspended",
                    now=now,
                    error_code=EXTERNAL_OUTCOME_UNCONFIRMED,
                )
                continue
            remaining = max(0, int((row.run_at - now).total_seconds() * 1000))
            values: dict[str, Any] = {
                "status": JobStatus.PAUSED,
                "paused_remaining_ms": remaining,
                "generation": jobs.c.generation + 1,
                "updated_at": now,
            }
            if row.status == "running":
                values.update(CLEAR_LEASE, paused_remaining_ms=0, attempts=max(row.attempts - 1, 0))
                await finish_running_attempts(
                    conn,
                    [row.id],
                    status=AttemptStatus.CANCELED,
                    error="instance suspended",
                    now=now,
                )
            await conn.execute(update(jobs).where(jobs.c.id == row.id).values(**values))
            paused.append(row.id)
        return paused

    async def jobs_resume(
        self, conn: AsyncConnection, instance_id: int, *, types: Collection[str], now: datetime
    ) -> list[int]:
        """Reschedule the instance's paused jobs of ``types`` with their saved remainder."""
        rows = await _lock_instance_jobs(conn, instance_id, types, _sources(JobTransition.RESUME))
        for row in rows:
            remaining = row.paused_remaining_ms or 0
            await conn.execute(
                update(jobs)
                .where(jobs.c.id == row.id)
                .values(
                    status=JobStatus.PENDING,
                    run_at=now + timedelta(milliseconds=remaining),
                    paused_remaining_ms=None,
                    generation=jobs.c.generation + 1,
                    updated_at=now,
                )
            )
        for pool in {row.pool for row in rows}:
            await wake.hint(conn, pool)
        return [row.id for row in rows]

    async def jobs_cancel_for_instance(
        self,
        conn: AsyncConnection,
        instance_id: int,
        *,
        types: Collection[str],
        now: datetime,
        reason: str = "instance ended",
        keep_job_id: int | None = None,
    ) -> list[int]:
        """Cancel the instance's live jobs of ``types`` (the caller's policy:
        the engine's advancement types that could still wake, SPEC L-22).
        ``keep_job_id`` is the job whose own step ends the instance: it
        is left running so that it settles with its real outcome."""
        rows = await _lock_instance_jobs(
            conn, instance_id, types, _sources(JobTransition.CANCEL_FOR_INSTANCE)
        )
        ids = [row.id for row in rows if row.id != keep_job_id]
        if ids:
            await _cancel_ids(conn, ids, now=now, reason=reason)
        return ids

    async def jobs_cancel_advancement(
        self,
        conn: AsyncConnection,
        instance_id: int,
        *,
        types: Collection[str],
        now: datetime,
        reason: str,
        task_ids: list[int] | None = None,
        dry_run: bool = False,
    ) -> list[dict[str, Any]]:
        """Cancel the instance's live jobs of ``types`` (the caller's policy:
        a force jump's advancement types); returns what was canceled (id,
        type, node, task, status before). ``dry_run`` only lists them."""
        rows = await _lock_instance_jobs(
            conn, instance_id, types, _sources(JobTransition.CANCEL_FOR_INSTANCE)
        )
        if task_ids is not None:
            wanted = set(task_ids)
            detail = await conn.execute(
                select(jobs.c.id, jobs.c.task_id).where(jobs.c.id.in_([r.id for r in rows]))
            )
            of_task = {int(i) for i, t in detail.all() if t is not None and int(t) in wanted}
            rows = [r for r in rows if r.id in of_task]
        if not rows:
            return []
        info = {
            int(r.id): r
            for r in (
                await conn.execute(
                    select(jobs.c.id, jobs.c.type, jobs.c.node_key, jobs.c.task_id, jobs.c.status)
                    .where(jobs.c.id.in_([r.id for r in rows]))
                    .order_by(jobs.c.id)
                )
            ).all()
        }
        ids = sorted(info)
        if not dry_run:
            await _cancel_ids(conn, ids, now=now, reason=reason)
        return [
            {
                "jobId": i,
                "type": info[i].type,
                "nodeKey": info[i].node_key,
                "taskId": info[i].task_id,
                "status": info[i].status,
            }
            for i in ids
        ]

    async def job_retry(
        self,
        conn: AsyncConnection,
        job_id: int,
        *,
        now: datetime,
        payload: dict[str, Any] | None = None,
        run_at: datetime | None = None,
    ) -> None:
        """failed/dead/canceled → pending, a new generation, attempts reset,
        earlier attempt rows kept. A changed payload gets a new operationKey
        (its receipts and X-Idempotency-Key start afresh)."""
        row = await _lock_job(conn, job_id)
        if row.status not in transition_sources(JobTransition.RETRY):
            if row.status == JobStatus.PAUSED:
                raise InvalidStateError(
                    f"job {job_id} is paused with its instance; resume the instance instead",
                    field="status",
                    status=row.status,
                )
            raise InvalidStateError(
                f"job {job_id} is {row.status}; only failed, dead or canceled jobs can be retried"
                + (" (an automatic retry is already scheduled)" if row.status == "pending" else ""),
                field="status",
                status=row.status,
            )
        values: dict[str, Any] = {
            "status": JobStatus.PENDING,
            "attempts": 0,
            "generation": jobs.c.generation + 1,
            "run_at": run_at or now,
            "side_effect_at": None,
            "paused_remaining_ms": None,
            "updated_at": now,
            **CLEAR_LEASE,
        }
        if payload is not None and payload != row.payload:
            values.update(payload=payload, operation_key=new_key())
        await conn.execute(update(jobs).where(jobs.c.id == job_id).values(**values))
        await wake.hint(conn, row.pool)

    async def job_cancel(
        self,
        conn: AsyncConnection,
        job_id: int,
        *,
        now: datetime,
        reason: str = "canceled by operator",
    ) -> None:
        """An operator's "skip": the job never runs again and any executor
        loses ownership. The running attempt, if any, is marked canceled."""
        row = await _lock_job(conn, job_id)
        if row.status not in transition_sources(JobTransition.CANCEL):
            raise InvalidStateError(
                f"job {job_id} is {row.status} and cannot be canceled",
                field="status",
                status=row.status,
            )
        await _cancel_ids(conn, [job_id], now=now, reason=reason)

    async def jobs_retarget(
        self, conn: AsyncConnection, moves: dict[int, str], *, now: datetime
    ) -> None:
        """Point each job of ``moves`` at its new node (an instance migrated
        to another definition version, issue 30); ``run_at``, payload,
        status and attempts untouched (rows locked in id order)."""
        if not moves:
            return
        ids = sorted(moves)
        await conn.execute(select(jobs.c.id).where(locked_in_id_order(jobs.c.id.in_(ids))))
        await conn.execute(
            update(jobs)
            .where(jobs.c.id == bindparam("b_id"))
            .values(node_key=bindparam("b_node"), updated_at=now),
            [{"b_id": job_id, "b_node": moves[job_id]} for job_id in ids],
        )

    async def jobs_mark_replay_batch(
        self, conn: AsyncConnection, job_ids: list[int], batch_id: str | None
    ) -> None:
        """Record (or, with None, clear) the replay batch id of ``job_ids``
        (rows locked in id order, as every multi-row writer locks them)."""
        if job_ids:
            await conn.execute(
                update(jobs)
                .where(locked_in_id_order(jobs.c.id.in_(job_ids)))
                .values(replay_batch_id=batch_id)
            )
