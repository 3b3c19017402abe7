"""The PostgreSQL engine store (issue 28 item 2): what differs from the
portable Core store — a start's instance and token inserted in one
statement that also reserves ids for the step
(:mod:`~flowledger.engine.store.reserved_ids`), a task's lock reserving them
too, a job step's instance lock, delay finish and fenced job lock in one
statement (:mod:`~flowledger.engine.store.job_lock`), a fork or a join in
one statement of data-modifying CTEs, an ending
that reads what it must clean up in its own UPDATE, and a step's rows in one
statement, or riding on another one as CTEs
(:mod:`~flowledger.engine.store.writes`)."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Rider
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
from flowledger.engine.store.tokens import Frame, pg_replace_tokens
from flowledger.engine.store.writes import (
    ForkRows,
    StepRows,
    pg_step_rows_rider,
    pg_write_forks,
    pg_write_moves,
    pg_write_step_rows,
)
from flowledger.ledger.models import Fence

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

    def step_rows_rider(self, rows: StepRows) -> Rider | None:
        return pg_step_rows_rider(rows)

    async def forks_write(self, conn: AsyncConnection, forks: ForkRows) -> None:
        await pg_write_forks(conn, forks)
