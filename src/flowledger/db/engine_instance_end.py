"""The statement that ends an instance's row (SPEC E-6, L-22; issue 15 item
2; issue 16: the dialect choice stays in ``db/``): its status,
``finished_at`` and ``updated_at`` set, and what the ending must clean up
read — the ids of its open (pending or waiting) tasks, and of its jobs of
the given types in the given statuses other than the job running the step
(the jobs L-22's cleanup would cancel; the caller cancels them, locking
them then, only when there are any). PostgreSQL: one statement (the ids
come back in its RETURNING, read in the statement's snapshot). SQLite (in
process): the reads, then the update. A caller's condition on the row (an
engine hook's: does the ending need it?) is returned with them."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import BigInteger, ColumnElement, String, any_, bindparam, func, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.dialects import POSTGRESQL, dialect_name
from flowledger.db.engine_schema import workflow_instances, workflow_tasks
from flowledger.db.schema import workflow_jobs
from flowledger.states import TaskStatus

OPEN = (TaskStatus.PENDING.value, TaskStatus.WAITING.value)


@dataclass(frozen=True)
class InstanceEnd:
    open_task_ids: list[int]
    live_job_ids: list[int]
    also: bool = True  # the caller's condition on the row (true without one)


_SET = update(workflow_instances).where(workflow_instances.c.id == bindparam("b_instance_id"))
_TASK = workflow_tasks.alias("o")
_JOB = workflow_jobs.alias("j")
_PG_END = _SET.returning(
    select(func.array_agg(_TASK.c.id))
    .where(_TASK.c.instance_id == workflow_instances.c.id, _TASK.c.status.in_(OPEN))
    .scalar_subquery()
    .label("open_task_ids"),
    select(func.array_agg(_JOB.c.id))
    .where(
        _JOB.c.instance_id == workflow_instances.c.id,
        _JOB.c.type == any_(bindparam("b_job_types", type_=ARRAY(String()))),
        _JOB.c.status == any_(bindparam("b_job_statuses", type_=ARRAY(String()))),
        _JOB.c.id.is_distinct_from(bindparam("b_keep_job_id", type_=BigInteger())),
    )
    .scalar_subquery()
    .label("live_job_ids"),
)
_OPEN_IDS = select(_TASK.c.id).where(
    _TASK.c.instance_id == bindparam("b_instance_id"), _TASK.c.status.in_(OPEN)
)
_LIVE_JOBS = select(_JOB.c.id).where(
    _JOB.c.instance_id == bindparam("b_instance_id"),
    _JOB.c.type.in_(bindparam("b_job_types", expanding=True)),
    _JOB.c.status.in_(bindparam("b_job_statuses", expanding=True)),
)


@cache  # one statement per condition (an engine hook's constant)
def _pg_end_with(also: ColumnElement[bool]) -> Any:
    return _PG_END.returning(also.label("also"))


def _pg_end(also: ColumnElement[bool] | None) -> Any:
    """The PostgreSQL statement, with ``also`` returned too."""
    return _PG_END if also is None else _pg_end_with(also)


def _ids(values: Any) -> list[int]:
    return sorted(int(value) for value in values or ())


async def end_instance_row(
    conn: AsyncConnection,
    instance_id: int,
    *,
    status: str,
    now: datetime,
    job_types: Collection[str] = (),
    job_statuses: Collection[str] = (),
    keep_job_id: int | None = None,
    also: ColumnElement[bool] | None = None,
) -> InstanceEnd:
    """Set the instance's ``status`` and its ``finished_at`` and
    ``updated_at`` to ``now``; its open tasks and its jobs of ``job_types``
    in ``job_statuses`` (but ``keep_job_id``), by ascending id, and whether
    ``also`` (a condition correlated to ``workflow_instances``) holds."""
    values: dict[str, Any] = {
        "b_instance_id": instance_id,
        "status": status,
        "finished_at": now,
        "updated_at": now,
    }
    if dialect_name(conn) == POSTGRESQL:
        jobs = {
            "b_job_types": sorted(job_types),
            "b_job_statuses": sorted(job_statuses),
            "b_keep_job_id": keep_job_id,
        }
        row = (await conn.execute(_pg_end(also), {**values, **jobs})).one()
        holds = True if also is None else bool(row.also)
        return InstanceEnd(_ids(row.open_task_ids), _ids(row.live_job_ids), holds)
    tasks = (await conn.execute(_OPEN_IDS, {"b_instance_id": instance_id})).scalars().all()
    found = (
        (
            await conn.execute(
                _LIVE_JOBS,
                {
                    "b_instance_id": instance_id,
                    "b_job_types": list(job_types),
                    "b_job_statuses": list(job_statuses),
                },
            )
        )
        .scalars()
        .all()
    )
    holds = True
    if also is not None:
        probe = select(also).where(workflow_instances.c.id == bindparam("b_instance_id"))
        holds = bool((await conn.execute(probe, {"b_instance_id": instance_id})).scalar_one())
    await conn.execute(_SET, values)
    live = [job_id for job_id in found if job_id != keep_job_id]
    return InstanceEnd(_ids(tasks), _ids(live), holds)
