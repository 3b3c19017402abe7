"""A job step's first statement (SPEC L-13, L-14; issue 28): the instance
row locked, then — for a delay's wake — the delay's waiting task finished,
then the ledger job's fenced lock with the step's receipt read.

One named mechanism, in the engine's store: the ledger exports its fence as
SQL constructs (:mod:`flowledger.ledger.driver.fence`) and this module
composes them with the engine's own rows; the ledger runs nothing of the
engine's. On PostgreSQL it is one statement (:func:`pg_job_step_lock`):

- ``locked_instance``, a ``MATERIALIZED`` CTE, locks the instance row first;
- ``finished_task``, a CTE, finishes the task while that instance is
  running, the task is still ``expected`` and holds an active token, and the
  step has no receipt yet (``NO_PRIOR_RECEIPT``: a retried operation reuses
  what it committed);
- the fence's select (``lock_fenced_after``) joins both to the job row,
  which it locks as the joined row leaves the join — after the instance
  row, so the lock order stays L-13's;
- its condition ``STEP_GENERIC_PLANS`` sets the step's generic plans
  (:mod:`~flowledger.engine.store.generic_plans`).

The finish reads in the snapshot of that statement, taken before any wait
for the instance lock: the task row itself is re-checked at its newest
version when it changed (PostgreSQL's read-committed update), and the held
token's state changes only together with the task's (a token holding a
waiting task is moved or consumed only by a step that also ends the task).

Elsewhere (:func:`core_job_step_lock`, SQLite) the same three parts are
three statements in the same order, the finish only when the instance is
running and no receipt exists. :data:`TASK_FINISH` is also what a step that
already holds its instance runs (``engine.tasks.finish_held_task``)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, bindparam, exists, literal_column, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_instances, workflow_tasks, workflow_tokens
from flowledger.engine.store.generic_plans import STEP_GENERIC_PLANS
from flowledger.errors import LeaseLostError
from flowledger.ledger.driver.fence import (
    NO_PRIOR_RECEIPT,
    RECEIPT_ID,
    RECEIPT_RESULT,
    fence_params,
    lock_fenced_after,
)
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import Fence
from flowledger.states import InstanceStatus, TaskStatus, TokenState

# every column of the instance row but its frozen snapshot (read on a
# snapshot cache miss only)
STEP_COLUMNS = [c for c in workflow_instances.c if c.key != "snapshot"]
# the first lock of every step (L-13)
INSTANCE_LOCK = (
    select(*STEP_COLUMNS)
    .where(workflow_instances.c.id == bindparam("lock_instance_id"))
    .with_for_update()
)


@dataclass(frozen=True)
class TaskFinish:
    """A task the step finishes right after its instance lock: while the
    instance is running, the task is still ``expected`` and its token is
    active (a delay's wake)."""

    task_id: int
    expected: TaskStatus
    status: TaskStatus
    action: str | None
    by: str
    now: datetime

    def params(self) -> dict[str, Any]:
        return {
            "finish_task_id": self.task_id,
            "finish_expected": self.expected,
            "finish_status": self.status,
            "finish_action": self.action,
            "finish_now": self.now,
            "finish_by": self.by,
        }


@dataclass(frozen=True)
class FinishedTask:
    """What :class:`TaskFinish` wrote: the task's node and the token it holds."""

    node_key: str
    token_id: int
    token_node_key: str
    token_fork_stack: list[int]


@dataclass(frozen=True)
class JobStepLocked:
    """A job step's first statement's result: the instance row (None: no
    such instance), the step's receipt, and the task finished (None: there
    was no finish, or it wrote nothing)."""

    instance: dict[str, Any] | None
    receipt_found: bool
    receipt_result: Any
    finished: FinishedTask | None


def _held(column: str, type_: Any) -> Any:
    # spelled out: SQLAlchemy renders RETURNING columns unqualified on SQLite,
    # which would leave the subquery's correlation to name resolution
    return literal_column(
        f"(SELECT held.{column} FROM workflow_tokens AS held "
        "WHERE held.id = workflow_tasks.token_id)",
        type_,
    )


_HELD = workflow_tokens.alias("held")
_FINISHED_COLUMNS = (
    workflow_tasks.c.node_key,
    workflow_tasks.c.token_id,
    _held("node_key", workflow_tokens.c.node_key.type).label("token_node_key"),
    _held("fork_stack", workflow_tokens.c.fork_stack.type).label("token_fork_stack"),
)


def _task_finish(*conditions: ColumnElement[bool]) -> Any:
    return (
        update(workflow_tasks)
        .where(
            workflow_tasks.c.id == bindparam("finish_task_id"),
            workflow_tasks.c.status == bindparam("finish_expected"),
            exists().where(
                _HELD.c.id == workflow_tasks.c.token_id, _HELD.c.state == TokenState.ACTIVE
            ),
            *conditions,
        )
        .values(
            status=bindparam("finish_status"),
            action=bindparam("finish_action"),
            comment=None,
            finished_at=bindparam("finish_now"),
            finished_by=bindparam("finish_by"),
        )
        .returning(*_FINISHED_COLUMNS)
    )


# the finish in a transaction that holds the (running) instance already:
# its id bound as ``lock_instance_id``
TASK_FINISH = _task_finish(workflow_tasks.c.instance_id == bindparam("lock_instance_id"))


def finished_task(row: Any, prefix: str = "") -> FinishedTask | None:
    """The :class:`FinishedTask` of a row :data:`TASK_FINISH` returned (its
    columns under ``prefix`` in the PostgreSQL statement's row)."""
    values = None if row is None else row._mapping
    if values is None or values[prefix + "token_id"] is None:
        return None
    return FinishedTask(
        node_key=str(values[prefix + "node_key"]),
        token_id=int(values[prefix + "token_id"]),
        token_node_key=str(values[prefix + "token_node_key"]),
        token_fork_stack=list(values[prefix + "token_fork_stack"] or []),
    )


_FINISHED = "finished_"  # the prefix of the finish's columns in the PostgreSQL row


def _pg_statements() -> tuple[Any, Any]:
    """The PostgreSQL statement without and with the task finish."""
    locked = INSTANCE_LOCK.cte("locked_instance").prefix_with("MATERIALIZED")
    plain = lock_fenced_after([locked], list(locked.c)).where(STEP_GENERIC_PLANS)
    finish = _task_finish(
        workflow_tasks.c.instance_id == select(locked.c.id).scalar_subquery(),
        select(locked.c.status).scalar_subquery() == InstanceStatus.RUNNING.value,
        NO_PRIOR_RECEIPT,
    ).cte("finished_task")
    finished = [finish.c[c.key].label(_FINISHED + c.key) for c in _FINISHED_COLUMNS]
    with_finish = lock_fenced_after([locked, finish], [*locked.c, *finished]).where(
        STEP_GENERIC_PLANS
    )
    return plain, with_finish


_PG_LOCK, _PG_LOCK_AND_FINISH = _pg_statements()
_STEP_KEYS = [c.key for c in STEP_COLUMNS]


async def pg_job_step_lock(
    conn: AsyncConnection,
    instance_id: int,
    fence: Fence,
    operation_key: str,
    step_key: str,
    *,
    now: datetime,
    finish: TaskFinish | None = None,
) -> JobStepLocked:
    """The job step's first statement on PostgreSQL: one round trip."""
    params = fence_params(fence, operation_key, step_key, now)
    params["lock_instance_id"] = instance_id
    if finish is not None:
        params.update(finish.params())
    statement = _PG_LOCK if finish is None else _PG_LOCK_AND_FINISH
    row = (await conn.execute(statement, params)).first()
    if row is None:
        raise LeaseLostError(f"job {fence.job_id} is no longer owned by this executor")
    values = row._mapping
    instance = None if values["id"] is None else {key: values[key] for key in _STEP_KEYS}
    done = None if finish is None else finished_task(row, _FINISHED)
    found = values[RECEIPT_ID] is not None
    return JobStepLocked(instance, found, values[RECEIPT_RESULT] if found else None, done)


async def core_job_step_lock(
    conn: AsyncConnection,
    ledger: LedgerDriver,
    instance_id: int,
    fence: Fence,
    operation_key: str,
    step_key: str,
    *,
    now: datetime,
    finish: TaskFinish | None = None,
) -> JobStepLocked:
    """The same three parts as three statements, in the same order: the
    instance lock, the ledger's fenced job lock with the receipt, then the
    finish (when the instance is running and the step has no receipt)."""
    found_row = (await conn.execute(INSTANCE_LOCK, {"lock_instance_id": instance_id})).first()
    found, result = await ledger.job_lock_fenced_receipt(
        conn, fence, operation_key, step_key, now=now
    )
    instance = None if found_row is None else dict(found_row._mapping)
    done = None
    running = instance is not None and instance["status"] == InstanceStatus.RUNNING
    if finish is not None and running and not found:
        params = {"lock_instance_id": instance_id, **finish.params()}
        done = finished_task((await conn.execute(TASK_FINISH, params)).first())
    return JobStepLocked(instance, found, result if found else None, done)
