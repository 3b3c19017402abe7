"""The portable engine store (issue 28 item 2): every write one statement
at a time, in order, with SQLAlchemy Core — what
:class:`~flowledger.engine.store.sqlite.SqliteEngineStore` runs, and what
:class:`~flowledger.engine.store.postgres.PostgresEngineStore` does not
override. Nothing is reserved and no statement is composed with the
ledger's: a step's rows, then the ledger's write."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.engine.store.instance_end import (
    Ending,
    InstanceEnd,
    core_end_instance_row,
    core_end_instance_with_last_token,
)
from flowledger.engine.store.job_lock import JobStepLocked, TaskFinish, core_job_step_lock
from flowledger.engine.store.migrate import InstanceMigration, core_migrate_instance
from flowledger.engine.store.plan import PlannedJob, PlannedSettlement, StepPlan, commit_shape
from flowledger.engine.store.start import Started, core_insert_instance_and_start_token
from flowledger.engine.store.tokens import Frame, core_replace_tokens
from flowledger.engine.store.writes import (
    ForkRows,
    StepRows,
    core_write_moves,
    core_write_step_rows,
)
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import EnqueueResult, Fence, JobSpec, Outcome


class CoreEngineStore:
    """The engine's writes in portable Core, one statement at a time."""

    name = "core"

    def __init__(self, ledger: LedgerDriver) -> None:
        # the ledger driver of the same database: the step's jobs (enqueue,
        # pause, resume, cleanup) go through it
        self.ledger = ledger

    async def instance_insert(
        self,
        conn: AsyncConnection,
        instance: dict[str, Any],
        token: dict[str, Any],
        *,
        latest_of: bool = False,
    ) -> Started | None:
        return await core_insert_instance_and_start_token(
            conn, instance, token, latest_of=latest_of
        )

    async def job_step_lock(
        self,
        conn: AsyncConnection,
        instance_id: int,
        fence: Fence,
        operation_key: str,
        step_key: str,
        *,
        now: datetime,
        finish: TaskFinish | None = None,
    ) -> JobStepLocked:
        return await core_job_step_lock(
            conn, self.ledger, instance_id, fence, operation_key, step_key, now=now, finish=finish
        )

    def lock_reserving(self, lock: Select[Any]) -> Select[Any]:
        return lock  # nothing to reserve

    async def tokens_replace(
        self,
        conn: AsyncConnection,
        *,
        instance_id: int,
        consume: list[int],
        at_node: str | None,
        places: list[str],
        fork_stack: list[int],
        now: datetime,
        frame: Frame | None = None,
    ) -> tuple[int | None, list[int]]:
        return await core_replace_tokens(
            conn,
            instance_id=instance_id,
            consume=consume,
            at_node=at_node,
            places=places,
            fork_stack=fork_stack,
            now=now,
            frame=frame,
        )

    async def instance_end(
        self, conn: AsyncConnection, instance_id: int, ending: Ending
    ) -> InstanceEnd:
        return await core_end_instance_row(conn, instance_id, ending)

    async def instance_end_with_last_token(
        self,
        conn: AsyncConnection,
        instance_id: int,
        ending: Ending,
        *,
        token_id: int,
        at_node: str | None,
    ) -> InstanceEnd | None:
        return await core_end_instance_with_last_token(
            conn, instance_id, ending, token_id=token_id, at_node=at_node
        )

    async def token_moves_write(
        self, conn: AsyncConnection, moves: dict[int, str], parks: Collection[int] = ()
    ) -> None:
        await core_write_moves(conn, moves, parks)

    async def step_rows_write(self, conn: AsyncConnection, rows: StepRows) -> None:
        await core_write_step_rows(conn, rows)

    async def step_rows_and_settlement(
        self,
        conn: AsyncConnection,
        rows: StepRows,
        fence: Fence,
        operation_key: str,
        step_key: str,
        receipt: Any,
        outcome: Outcome,
        *,
        now: datetime,
        started_at: datetime | None,
    ) -> bool:
        await self.step_rows_write(conn, rows)
        return await self.ledger.receipt_put_and_settle(
            conn, fence, operation_key, step_key, receipt, outcome, now=now, started_at=started_at
        )

    async def jobs_and_step_rows_write(
        self,
        conn: AsyncConnection,
        specs: Sequence[JobSpec],
        ids: Sequence[int],
        rows: StepRows,
        *,
        now: datetime,
    ) -> list[EnqueueResult]:
        inserted = await self.ledger.jobs_insert(conn, specs, now=now, ids=ids)
        await self.step_rows_write(conn, rows)
        return inserted

    async def step_commit(
        self,
        conn: AsyncConnection,
        plan: StepPlan,
        settlement: PlannedSettlement | None = None,
    ) -> bool:
        shape = commit_shape(plan, settlement)
        if shape == "jobs_and_rows":
            ids = plan.reserved_job_ids() or []
            jobs, plan.jobs = plan.jobs, []
            plan.fold_moves()
            specs = [job.spec for job in jobs]
            await self.jobs_and_step_rows_write(conn, specs, ids, plan.rows, now=jobs[0].now)
            return True
        await self.step_jobs_write(conn, plan)
        plan.fold_moves()
        if settlement is None:
            await self.step_rows_write(conn, plan.rows)
            return True
        return await self.step_rows_and_settlement(
            conn,
            plan.rows,
            settlement.fence,
            settlement.operation_key,
            settlement.step_key,
            settlement.receipt,
            settlement.outcome,
            now=settlement.now,
            started_at=settlement.started_at,
        )

    async def step_jobs_write(self, conn: AsyncConnection, plan: StepPlan) -> None:
        for batch in plan.take_job_batches():
            await self._jobs_insert(conn, batch)

    async def _jobs_insert(self, conn: AsyncConnection, jobs: list[PlannedJob]) -> None:
        """Insert ``jobs`` (one clock reading; all with reserved ids or none);
        the others' trace rows take the ids the insert drew."""
        reserved = [job.reserved_id for job in jobs]
        ids = None if reserved[0] is None else [int(i) for i in reserved if i is not None]
        results = await self.ledger.jobs_insert(
            conn, [job.spec for job in jobs], now=jobs[0].now, ids=ids
        )
        for job, result in zip(jobs, results, strict=True):
            if job.reserved_id is not None and result.job_id != job.reserved_id:
                raise RuntimeError(f"job {job.reserved_id} was inserted as {result.job_id}")
            job.trace_row["job_id"] = result.job_id

    async def forks_write(self, conn: AsyncConnection, forks: ForkRows) -> None:
        raise AssertionError("forks are held with reserved ids, and only PostgreSQL reserves")

    async def instance_migrate(
        self, conn: AsyncConnection, migration: InstanceMigration
    ) -> list[int]:
        return await core_migrate_instance(conn, self.ledger, migration)
