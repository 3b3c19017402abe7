"""The shared SQLAlchemy Core implementation of the job hot path: insert
(SPEC L-1, L-12, L-15), claim (L-6, L-7, L-10), settlement (L-3 … L-5, L-9,
L-17) and the ownership checks of executors (L-9 … L-11, L-13).

The idempotencyKey is enforced by the unique constraint on
``workflow_jobs.idempotency_key`` (``INSERT … ON CONFLICT DO NOTHING``), never
by a prior lookup. A settlement whose fence (id, generation, lease token,
running) no longer matches writes nothing and reports False; a finished
attempt row is never rewritten (``status = 'running'`` guard).

The rows' values and an outcome's settlement values are
:mod:`~flowledger.ledger.driver.job_values`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import case, func, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db import wake
from flowledger.db.database import Database
from flowledger.db.dialects import upsert
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import LeaseLostError
from flowledger.ledger.driver import bulk
from flowledger.ledger.driver.job_values import (
    DEFAULT_LEASE_MS,
    duration_ms,
    is_plain_success,
    job_row,
    plan_outcome,
    to_claimed,
)
from flowledger.ledger.driver.pause_filter import unpaused
from flowledger.ledger.driver.plans import (
    CLEAR_LEASE,
    claim_plan,
    fence_clause,
    locked_in_id_order,
    run_async,
    settle_successes_plan,
)
from flowledger.ledger.fingerprint import fingerprint
from flowledger.ledger.models import (
    ClaimBatch,
    ClaimedJob,
    EnqueueResult,
    Fence,
    JobSpec,
    Outcome,
    OutcomeKind,
    SuccessRow,
)
from flowledger.ledger.types import JobTypeRegistry
from flowledger.states import JobStatus


class JobsCore:
    """Insert, claim, settle and fencing in portable SQLAlchemy Core."""

    # --- insert -----------------------------------------------------------------
    async def job_insert(
        self,
        conn: AsyncConnection,
        spec: JobSpec,
        *,
        now: datetime,
        job_types: JobTypeRegistry | None = None,
    ) -> EnqueueResult:
        row = job_row(spec, now, job_types)
        stmt = (
            upsert(conn, jobs)
            .values(**row)
            .on_conflict_do_nothing(index_elements=[jobs.c.idempotency_key])
            .returning(jobs.c.id)
        )
        job_id = (await conn.execute(stmt)).scalar_one_or_none()
        if job_id is None:  # the idempotency key already names a job
            existing = await conn.execute(
                select(jobs.c.id).where(jobs.c.idempotency_key == spec.idempotency_key)
            )
            return EnqueueResult(existing.scalar_one(), created=False)
        await wake.hint(conn, row["pool"])
        return EnqueueResult(int(job_id), created=True)

    async def jobs_insert(
        self,
        conn: AsyncConnection,
        specs: Sequence[JobSpec],
        *,
        now: datetime,
        job_types: JobTypeRegistry | None = None,
        ids: Sequence[int] | None = None,
    ) -> list[EnqueueResult]:
        """Every row :meth:`job_insert` would write, in a few statements
        (:meth:`_insert_rows`); the answer per spec as :mod:`.bulk` gives it;
        one wake hint per pool that got a new job."""
        rows = [job_row(spec, now, job_types) for spec in specs]
        if not rows:
            return []
        if ids is not None:
            if len(ids) != len(rows):
                raise ValueError(f"{len(ids)} ids given for {len(rows)} jobs")
            if any(row["idempotency_key"] is not None for row in rows):
                raise ValueError("ids are given only for jobs without idempotencyKeys")
            for row, job_id in zip(rows, ids, strict=True):
                row["id"] = job_id
        inserted = await self._insert_rows(conn, rows)
        answer = await bulk.results(conn, rows, inserted)
        for pool in sorted({rows[p]["pool"] for p in inserted}):
            await self._hint_inserted(conn, pool)
        return answer

    async def _hint_inserted(self, conn: AsyncConnection, pool: str) -> None:
        """Publish the wake hint of ``pool``, which :meth:`_insert_rows` gave a job."""
        await wake.hint(conn, pool)

    async def _insert_rows(
        self, conn: AsyncConnection, rows: Sequence[dict[str, Any]]
    ) -> dict[int, int]:
        """Insert ``rows`` in input order, skipping any whose idempotencyKey
        names a job already; position → id of each row inserted. One
        executemany, which SQLAlchemy sends as multi-row ``INSERT … ON
        CONFLICT DO NOTHING RETURNING`` statements of up to 1,000 rows (under
        SQLite's bound-variable limit). The returned rows come in no promised
        order, so they are matched by key and by id (:func:`.bulk.inserted_by_key`)."""
        stmt = (
            upsert(conn, jobs)
            .on_conflict_do_nothing(index_elements=[jobs.c.idempotency_key])
            .returning(jobs.c.id, jobs.c.idempotency_key)
        )
        returned = await conn.execute(stmt, list(rows))
        return bulk.inserted_by_key(rows, returned.all())

    # --- claim ------------------------------------------------------------------
    async def jobs_claim(
        self,
        db: Database,
        *,
        pool: str,
        limit: int,
        node_id: str,
        now: datetime,
        order: str = "priority",
        lease_ms: int = DEFAULT_LEASE_MS,
    ) -> list[ClaimedJob]:
        batch = await self.jobs_claim_batch(
            db, pool=pool, limit=limit, node_id=node_id, now=now, order=order, lease_ms=lease_ms
        )
        return batch.jobs

    async def jobs_claim_batch(
        self,
        db: Database,
        *,
        pool: str,
        limit: int,
        node_id: str,
        now: datetime,
        order: str = "priority",
        lease_ms: int = DEFAULT_LEASE_MS,
    ) -> ClaimBatch:
        """:meth:`jobs_claim` with the pool's next due time where
        :meth:`_claim_rows_due` learns it in the claim's statement."""
        if limit <= 0:
            return ClaimBatch([])
        rows, known, due = await self._claim_rows_due(
            db, pool=pool, limit=limit, node_id=node_id, now=now, lease_ms=lease_ms, order=order
        )
        return ClaimBatch([to_claimed(row) for row in rows], next_due=due, next_due_known=known)

    async def _claim_rows_due(
        self,
        db: Database,
        *,
        pool: str,
        limit: int,
        node_id: str,
        now: datetime,
        lease_ms: int,
        order: str,
    ) -> tuple[list[dict[str, Any]], bool, datetime | None]:
        """(claimed rows, known, the earliest ``run_at`` of the pool's pending
        rows not claimed). The portable claim selects the candidates
        (row-locked, skipping locked rows where the database has row locks),
        leases them and adds one attempt row each in one transaction
        (:func:`.plans.claim_plan`); it does not read the next due time
        (known False). Implementations that read it in the claim's own
        statement override this."""
        plan = claim_plan(
            pool=pool, limit=limit, node_id=node_id, now=now, lease_ms=lease_ms, order=order
        )
        async with db.begin() as conn:
            return await run_async(conn, plan), False, None

    async def jobs_next_due(self, db: Database, *, pool: str) -> datetime | None:
        """Served by the partial index ``ix_workflow_jobs_claim_due``."""
        async with db.read() as conn:
            due: datetime | None = (
                await conn.execute(
                    select(func.min(jobs.c.run_at)).where(
                        jobs.c.pool == pool,
                        jobs.c.status == JobStatus.PENDING.value,
                        unpaused(),
                    )
                )
            ).scalar_one_or_none()
        return due

    # --- settle -----------------------------------------------------------------
    async def job_settle(
        self,
        conn: AsyncConnection,
        fence: Fence,
        outcome: Outcome,
        *,
        now: datetime,
        started_at: datetime | None = None,
    ) -> bool:
        """A success or skip is the batch's fenced success settlement over
        one row (one statement on PostgreSQL); other outcomes read the
        attempt budget first."""
        if is_plain_success(outcome):
            row_of = SuccessRow(
                fence.job_id,
                fence.generation,
                fence.lease_token,
                fence.execution_id,
                None if started_at is None else duration_ms(started_at, now),
                outcome.kind is OutcomeKind.SKIPPED,
                outcome.result,
                fence.execution_started_at,
            )
            return fence.job_id in await self._settle_successes_tx(conn, [row_of], now=now)
        row = (
            await conn.execute(
                select(jobs.c.attempts, jobs.c.max_attempts)
                .where(
                    jobs.c.id == fence.job_id,
                    fence_clause([(fence.job_id, fence.generation, fence.lease_token)]),
                )
                .with_for_update()
            )
        ).first()
        if row is None:
            return False
        values, attempt_status = plan_outcome(row.attempts, row.max_attempts, outcome, now)
        await conn.execute(
            update(jobs)
            .where(jobs.c.id == fence.job_id)
            .values(**values, **CLEAR_LEASE, updated_at=now)
        )
        attempt_values: dict[str, Any] = {
            "status": attempt_status,
            "finished_at": now,
            "error": outcome.error,
            # the attempt keeps its own cause; the job may say "attempts_exhausted"
            "error_code": outcome.error_code if outcome.error else None,
            "error_fingerprint": fingerprint(outcome.error),
        }
        if outcome.request is not None:
            attempt_values["request"] = outcome.request
        if outcome.response is not None:
            attempt_values["response"] = outcome.response
        if started_at is not None:
            attempt_values["duration_ms"] = duration_ms(started_at, now)
        await conn.execute(
            update(executions)
            .where(
                executions.c.id == fence.execution_id,
                executions.c.started_at == fence.execution_started_at,
                executions.c.status == "running",
            )
            .values(**attempt_values)
        )
        return True

    async def jobs_settle(
        self, db: Database, items: Sequence[tuple[ClaimedJob, Outcome]], *, now: datetime
    ) -> set[int]:
        """Successes and skips share one fenced statement per table
        (:meth:`_settle_successes`); other outcomes are settled one by one in
        a single transaction."""
        plain = [(job, o) for job, o in items if is_plain_success(o)]
        plain_ids = {job.id for job, _ in plain}
        other = [(job, o) for job, o in items if job.id not in plain_ids]
        settled: set[int] = set()
        if plain:
            settled |= await self._settle_successes(
                db,
                [
                    SuccessRow(
                        job.id,
                        job.generation,
                        job.lease_token,
                        job.execution_id,
                        duration_ms(job.started_at, now),
                        o.kind is OutcomeKind.SKIPPED,
                        o.result,
                        job.started_at,
                    )
                    for job, o in plain
                ],
                now=now,
            )
        if other:
            async with db.begin() as conn:
                for job, outcome in sorted(other, key=lambda item: item[0].id):  # lock order
                    if await self.job_settle(
                        conn, job.fence, outcome, now=now, started_at=job.started_at
                    ):
                        settled.add(job.id)
        return settled

    async def _settle_successes(
        self, db: Database, rows: Sequence[SuccessRow], *, now: datetime
    ) -> set[int]:
        """The fenced jobs → succeeded, then only their running attempts
        finished, in a transaction of their own."""
        async with db.begin() as conn:
            return await self._settle_successes_tx(conn, rows, now=now)

    async def _settle_successes_tx(
        self, conn: AsyncConnection, rows: Sequence[SuccessRow], *, now: datetime
    ) -> set[int]:
        """:func:`.plans.settle_successes_plan` in the caller's transaction."""
        return await run_async(conn, settle_successes_plan(rows, now))

    # --- fencing ----------------------------------------------------------------
    async def job_lock_fenced(self, conn: AsyncConnection, fence: Fence, *, now: datetime) -> None:
        """Same generation and lease token, still running, execution deadline
        not reached. Callers lock the instance row first (L-13)."""
        owned = (
            await conn.execute(
                select(jobs.c.id)
                .where(
                    fence_clause([(fence.job_id, fence.generation, fence.lease_token)]),
                    jobs.c.execution_deadline > now,
                )
                .with_for_update()
            )
        ).first()
        if owned is None:
            raise LeaseLostError(f"job {fence.job_id} is no longer owned by this executor")

    async def jobs_renew_leases(
        self, db: Database, claimed: Sequence[ClaimedJob], *, now: datetime, lease_ms: int
    ) -> set[int]:
        """Never past a job's execution deadline. The renewal never waits for
        a row lock: rows it can lock it extends (in id order); a row another
        transaction holds — a settlement or the executor's own business
        transaction — is left for the next renewal and counts as owned while
        its fence still matches (its lease has not run out: renewals come
        several times per lease). One statement unless some row was held."""
        if not claimed:
            return set()
        new_until = {
            job.id: min(now + timedelta(milliseconds=lease_ms), job.execution_deadline)
            for job in claimed
        }
        owned = (
            fence_clause([(j.id, j.generation, j.lease_token) for j in claimed]),
            jobs.c.execution_deadline > now,
        )
        stmt = (
            update(jobs)
            .where(locked_in_id_order(*owned, skip_locked=True), *owned)
            .values(lease_until=case(new_until, value=jobs.c.id), updated_at=now)
            .returning(jobs.c.id)
        )
        async with db.single_statement() as conn:
            renewed = {int(i) for i in (await conn.execute(stmt)).scalars()}
        if len(renewed) == len(new_until):
            return renewed
        held = [j for j in claimed if j.id not in renewed]
        async with db.read() as conn:
            still = select(jobs.c.id).where(
                fence_clause([(j.id, j.generation, j.lease_token) for j in held]),
                jobs.c.execution_deadline > now,
                jobs.c.lease_until > now,
            )
            return renewed | {int(i) for i in (await conn.execute(still)).scalars()}

    async def job_mark_side_effect(self, db: Database, fence: Fence, *, now: datetime) -> None:
        """Committed before the caller sends."""
        async with db.begin() as conn:
            await self.job_lock_fenced(conn, fence, now=now)
            await conn.execute(
                update(jobs)
                .where(jobs.c.id == fence.job_id)
                .values(side_effect_at=now, updated_at=now)
            )
            await conn.execute(
                update(executions)
                .where(
                    executions.c.id == fence.execution_id,
                    executions.c.started_at == fence.execution_started_at,
                )
                .values(side_effect_at=now)
            )
