"""Task ids a step reserves in a statement it sends anyway (issue 15 item 2;
SPEC E-5): the step then knows a new task's id without inserting it, and the
task's insert rides on the step's last statement with its other rows
(:mod:`~flowledger.engine.write_buffer`) instead of a round trip of its own.

PostgreSQL only (``nextval`` of the tasks' id sequence); elsewhere nothing is
reserved and a task is inserted when it is created, as before. Ids are
taken only after the instance row is locked (a new instance's start needs no
lock: nobody else sees it yet), so an instance's tasks keep ids ascending
in the order they were created: a step's reserved ids are drawn after every
earlier step on that instance committed, and a task it creates past them
draws a later id still. A reserved id a step does not use is a gap, as a
rolled-back insert leaves one."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Select, func, literal_column, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.dialects import POSTGRESQL, dialect_name

TASKS_ID_SEQUENCE = "workflow_tasks_id_seq"  # the sequence of workflow_tasks.id
RESERVED = 2  # ids per reserving statement: a start's first task, a fork's two waits
_PREFIX = "reserved_task_"


def reserve_columns() -> list[Any]:
    """Columns that draw :data:`RESERVED` task ids (put them where the
    statement's rows are already locked)."""
    seq: Any = literal_column(f"'{TASKS_ID_SEQUENCE}'")
    return [func.nextval(seq).label(f"{_PREFIX}{i}") for i in range(RESERVED)]


def take_reserved(row: dict[str, Any]) -> list[int]:
    """The ids reserved in ``row`` (removed from it), ascending; [] when none."""
    ids = [row.pop(f"{_PREFIX}{i}", None) for i in range(RESERVED)]
    return sorted(int(i) for i in ids if i is not None)


def reserving(lock: Select[Any]) -> Select[Any]:
    """``lock`` (a ``SELECT … FOR UPDATE``) that also reserves task ids: drawn
    in an outer query over the materialized lock, so after the lock is held
    (in the lock's own projection they would be drawn before any wait for it)."""
    locked = lock.cte("task_lock").prefix_with("MATERIALIZED")
    return select(locked, *reserve_columns())


def lock_statement(conn: AsyncConnection, plain: Select[Any], reserving: Select[Any]) -> Any:
    """The lock to send on ``conn``: the ``reserving`` form on PostgreSQL,
    ``plain`` elsewhere (nothing to reserve)."""
    return reserving if dialect_name(conn) == POSTGRESQL else plain
