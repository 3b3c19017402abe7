"""The PostgreSQL engine store (issue 28 item 2): what differs from the
portable Core store — a start's instance and token inserted in one
statement that also reserves ids for the step
(:mod:`~flowledger.engine.store.reserved_ids`), a task's lock reserving them
too, a job step's instance lock, delay finish and fenced job lock in one
statement (:mod:`~flowledger.engine.store.job_lock`), a fork or a join in
one statement of data-modifying CTEs, an ending
that reads what it must clean up in its own UPDATE, and a step's rows in one
statement (:mod:`~flowledger.engine.store.writes`) — or in the statement
that settles the step's job or inserts its jobs, composed here from the
ledger's exported parts (:mod:`~flowledger.engine.store.step_statements`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.engine.store.core import CoreEngineStore
from flowledger.engine.store.instance_end import (
    Ending,
    InstanceEnd,
    pg_end_instance_row,
    pg_end_instance_with_last_token,
)
from flowledger.engine.store.job_lock import JobStepLocked, TaskFinish, pg_job_step_lock
from flowledger.engine.store.reserved_ids import reserving
from flowledger.engine.store.start import Started, pg_insert_instance_and_start_token
from flowledger.engine.store.step_statements import write_jobs_then_rows, write_rows_then_settlement
from flowledger.engine.store.tokens import Frame, pg_replace_tokens
from flowledger.engine.store.writes import (
    ForkRows,
    StepRows,
    pg_step_rows_ctes,
    pg_write_forks,
    pg_write_moves,
    pg_write_step_rows,
)
from flowledger.ledger.driver.postgres_sql import JSON_INSERT_MAX_ROWS
from flowledger.ledger.models import EnqueueResult, Fence, JobSpec, Outcome

# one reserving form per lock statement (each a module constant of its caller)
_reserving = cache(reserving)


class PostgresEngineStore(CoreEngineStore):
    """The engine's writes on PostgreSQL."""

    name = "postgresql"

    async def instance_insert(
        self,
        conn: AsyncConnection,
        instance: dict[str, Any],
        token: dict[str, Any],
        *,
        latest_of: bool = False,
    ) -> Started | None:
        return await pg_insert_instance_and_start_token(conn, instance, token, latest_of=latest_of)

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
        return await pg_job_step_lock(
            conn, instance_id, fence, operation_key, step_key, now=now, finish=finish
        )

    def lock_reserving(self, lock: Select[Any]) -> Select[Any]:
        return _reserving(lock)

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
        return await pg_replace_tokens(
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
        return await pg_end_instance_row(conn, instance_id, ending)

    async def instance_end_with_last_token(
        self,
        conn: AsyncConnection,
        instance_id: int,
        ending: Ending,
        *,
        token_id: int,
        at_node: str | None,
    ) -> InstanceEnd | None:
        return await pg_end_instance_with_last_token(
            conn, instance_id, ending, token_id=token_id, at_node=at_node
        )

    async def token_moves_write(
        self, conn: AsyncConnection, moves: dict[int, str], parks: Collection[int] = ()
    ) -> None:
        await pg_write_moves(conn, moves, parks)

    async def step_rows_write(self, conn: AsyncConnection, rows: StepRows) -> None:
        await pg_write_step_rows(conn, rows)

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
        ctes = pg_step_rows_ctes(rows)
        if ctes is None:  # nothing of the step's: the ledger's own statement
            return await super().step_rows_and_settlement(
                conn,
                rows,
                fence,
                operation_key,
                step_key,
                receipt,
                outcome,
                now=now,
                started_at=started_at,
            )
        return await write_rows_then_settlement(
            conn,
            ctes,
            fence,
            operation_key,
            step_key,
            receipt,
            outcome,
            now=now,
            started_at=started_at,
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
        ctes = pg_step_rows_ctes(rows)
        if ctes is None or len(specs) > JSON_INSERT_MAX_ROWS:
            return await super().jobs_and_step_rows_write(conn, specs, ids, rows, now=now)
        return await write_jobs_then_rows(conn, specs, ids, ctes, now=now)

    async def forks_write(self, conn: AsyncConnection, forks: ForkRows) -> None:
        await pg_write_forks(conn, forks)
