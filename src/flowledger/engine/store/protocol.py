"""The engine store's protocol (issue 28 item 2): one method per kind of
write an engine step sends, with the dialect chosen once — the engine holds
one store (:func:`~flowledger.engine.store.engine_store`) and every step
carries it, as the worker holds its ledger driver. The portable
implementation is :class:`~flowledger.engine.store.core.CoreEngineStore`;
:class:`~flowledger.engine.store.postgres.PostgresEngineStore` and
:class:`~flowledger.engine.store.sqlite.SqliteEngineStore` override what
differs."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.engine.store.instance_end import Ending, InstanceEnd
from flowledger.engine.store.job_lock import JobStepLocked, TaskFinish
from flowledger.engine.store.migrate import InstanceMigration
from flowledger.engine.store.plan import PlannedSettlement, StepPlan
from flowledger.engine.store.start import Started
from flowledger.engine.store.tokens import Frame
from flowledger.engine.store.writes import ForkRows, StepRows
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import EnqueueResult, Fence, JobSpec, Outcome


class EngineStore(Protocol):
    """What an engine step writes, and how, on one kind of database."""

    name: str
    # the ledger driver of the same database, for the step's jobs
    ledger: LedgerDriver

    async def instance_insert(
        self,
        conn: AsyncConnection,
        instance: dict[str, Any],
        token: dict[str, Any],
        *,
        latest_of: bool = False,
    ) -> Started | None:
        """A new instance and its start token (and, where the store can,
        ids reserved for the start's step); None when ``latest_of`` and the
        version is no longer the latest."""

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
        """A job step's first statement (:mod:`~flowledger.engine.store.job_lock`):
        the instance row locked, ``finish`` written, the job's fenced lock
        and receipt — in that order (L-13). LeaseLostError when ``fence`` no
        longer owns the job."""

    def lock_reserving(self, lock: Select[Any]) -> Select[Any]:
        """``lock`` (a ``SELECT … FOR UPDATE`` of an instance row) as this
        store sends it: reserving ids for the step where it can."""

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
        """A fork or a join firing: consume tokens, create one per place."""

    async def instance_end(
        self, conn: AsyncConnection, instance_id: int, ending: Ending
    ) -> InstanceEnd:
        """End the instance's row; what the ending must clean up."""

    async def instance_end_with_last_token(
        self,
        conn: AsyncConnection,
        instance_id: int,
        ending: Ending,
        *,
        token_id: int,
        at_node: str | None,
    ) -> InstanceEnd | None:
        """Consume a token; end the instance when it was the last live one."""

    async def step_commit(
        self,
        conn: AsyncConnection,
        plan: StepPlan,
        settlement: PlannedSettlement | None = None,
    ) -> bool:
        """Write a step's ``plan`` (:mod:`~flowledger.engine.store.plan`) in
        the one of its fixed shapes that fits it — with ``settlement``, a job
        step's end; the plan is handed over (the caller keeps no reference,
        its trace rows take the ids of its jobs). Whether the fenced settlement took (always
        True without one; False: the caller rolls back)."""

    async def step_jobs_write(self, conn: AsyncConnection, plan: StepPlan) -> None:
        """Insert the plan's jobs now and take them out of it (their trace
        rows take the ids the inserts drew): before anything reads or
        changes the instance's jobs."""

    async def token_moves_write(
        self, conn: AsyncConnection, moves: dict[int, str], parks: Collection[int] = ()
    ) -> None:
        """Write token moves (and parks) now."""

    async def step_rows_write(self, conn: AsyncConnection, rows: StepRows) -> None:
        """Write a step's rows but its jobs now."""

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
        """A job step's last write: its rows (but its jobs), its receipt and
        the plain success (or skip) ``outcome`` of its job — one statement
        where the store can
        (:mod:`~flowledger.engine.store.step_statements`). Whether the fenced
        settlement took (False: the caller rolls back)."""

    async def jobs_and_step_rows_write(
        self,
        conn: AsyncConnection,
        specs: Sequence[JobSpec],
        ids: Sequence[int],
        rows: StepRows,
        *,
        now: datetime,
    ) -> list[EnqueueResult]:
        """A step's jobs, inserted as ``ids`` (reserved by the step; no
        idempotencyKeys), then its other rows — one statement where the
        store can."""

    async def forks_write(self, conn: AsyncConnection, forks: ForkRows) -> None:
        """Write held forks now."""

    async def instance_migrate(
        self, conn: AsyncConnection, migration: InstanceMigration
    ) -> list[int]:
        """Write one instance's migration to another definition version
        (:mod:`~flowledger.engine.store.migrate`), the instance row locked
        by the caller; the ids of the tasks it created."""
