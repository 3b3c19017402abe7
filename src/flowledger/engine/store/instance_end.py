"""The statement that ends an instance's row (SPEC E-6, L-22; issue 15 item
2; issue 28 item 5: the dialect choice stays in the engine store): its status,
``finished_at`` and ``updated_at`` set, and what the ending must clean up
read — the ids of its open (pending or waiting) tasks, and of its jobs of
the given types in the given statuses other than the job running the step
(the jobs L-22's cleanup would cancel; the caller cancels them, locking
them then, only when there are any). PostgreSQL: one statement (the ids
come back in its RETURNING, read in the statement's snapshot). SQLite (in
process): the reads, then the update. A caller's condition on the row (an
engine hook's: does the ending need it?) is returned with them.

:func:`end_instance_with_last_token`: a token reaching an end is consumed
and, when it was the instance's last live token, the instance ends — one
statement on PostgreSQL (the token's update a CTE; the ending's condition
"no other live token" read in the statement's snapshot, the instance row
being locked by the step)."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    String,
    any_,
    bindparam,
    exists,
    func,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_instances, workflow_tasks, workflow_tokens
from flowledger.db.schema import workflow_jobs
from flowledger.engine.store.tokens import consume_token_row
from flowledger.states import TaskStatus, TokenState

OPEN = (TaskStatus.PENDING.value, TaskStatus.WAITING.value)


@dataclass(frozen=True)
class Ending:
    """How an instance ends: its ``status``, finished ``now``; and what the
    ending reads with it — its jobs of ``job_types`` in ``job_statuses`` but
    ``keep_job_id``, and whether ``also`` (a condition correlated to
    ``workflow_instances``) holds."""

    status: str
    now: datetime
    job_types: Collection[str] = ()
    job_statuses: Collection[str] = ()
    keep_job_id: int | None = None
    also: ColumnElement[bool] | None = None


@dataclass(frozen=True)
class InstanceEnd:
    open_task_ids: list[int]
    live_job_ids: list[int]
    also: bool = True  # the caller's condition on the row (true without one)


_SET = update(workflow_instances).where(workflow_instances.c.id == bindparam("b_instance_id"))
_TASK = workflow_tasks.alias("o")
_JOB = workflow_jobs.alias("j")
_OTHER = workflow_tokens.alias("other")
_CONSUMED = TokenState.CONSUMED.value
_TOKEN_CONSUMED = (
    update(workflow_tokens)
    .where(workflow_tokens.c.id == bindparam("b_token_id"))
    .values(
        state=_CONSUMED,
        consumed_at=bindparam("b_consumed_at"),
        node_key=func.coalesce(bindparam("b_at_node", type_=String()), workflow_tokens.c.node_key),
    )
    .returning(workflow_tokens.c.id)
    .cte("consumed")
)
_IF_LAST = ~exists().where(
    _OTHER.c.instance_id == workflow_instances.c.id,
    _OTHER.c.state != _CONSUMED,
    _OTHER.c.id != bindparam("b_token_id"),
)
_RETURNING = (
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
_PG_END = _SET.returning(*_RETURNING)
_PG_END_LAST = _SET.where(_IF_LAST).add_cte(_TOKEN_CONSUMED).returning(*_RETURNING)
_OPEN_IDS = select(_TASK.c.id).where(
    _TASK.c.instance_id == bindparam("b_instance_id"), _TASK.c.status.in_(OPEN)
)
_LIVE_JOBS = select(_JOB.c.id).where(
    _JOB.c.instance_id == bindparam("b_instance_id"),
    _JOB.c.type.in_(bindparam("b_job_types", expanding=True)),
    _JOB.c.status.in_(bindparam("b_job_statuses", expanding=True)),
)


@cache  # one statement per condition (an engine hook's constant)
def _pg_end_with(also: ColumnElement[bool], last_token: bool) -> Any:
    return (_PG_END_LAST if last_token else _PG_END).returning(also.label("also"))


def _pg_end(also: ColumnElement[bool] | None, *, last_token: bool = False) -> Any:
    """The PostgreSQL statement (consuming a token, ending only when it was
    the last live one, when ``last_token``), with ``also`` returned too."""
    if also is None:
        return _PG_END_LAST if last_token else _PG_END
    return _pg_end_with(also, last_token)


def _ids(values: Any) -> list[int]:
    return sorted(int(value) for value in values or ())


async def pg_end_instance_row(
    conn: AsyncConnection, instance_id: int, ending: Ending
) -> InstanceEnd:
    """:func:`core_end_instance_row` in one statement (its reads in the
    UPDATE's RETURNING)."""
    values = _values(instance_id, ending)
    row = (await conn.execute(_pg_end(ending.also), {**values, **_jobs(ending)})).one()
    return _ended(row, ending)


async def core_end_instance_row(
    conn: AsyncConnection, instance_id: int, ending: Ending
) -> InstanceEnd:
    """Set the instance's status and its ``finished_at`` and ``updated_at``
    as ``ending`` says; its open tasks and the jobs ``ending`` names, by
    ascending id, and whether its condition holds (the reads, then the
    update)."""
    values = _values(instance_id, ending)
    tasks = (await conn.execute(_OPEN_IDS, {"b_instance_id": instance_id})).scalars().all()
    found = (
        (
            await conn.execute(
                _LIVE_JOBS,
                {
                    "b_instance_id": instance_id,
                    "b_job_types": list(ending.job_types),
                    "b_job_statuses": list(ending.job_statuses),
                },
            )
        )
        .scalars()
        .all()
    )
    holds = True
    if ending.also is not None:
        probe = select(ending.also).where(workflow_instances.c.id == bindparam("b_instance_id"))
        holds = bool((await conn.execute(probe, {"b_instance_id": instance_id})).scalar_one())
    await conn.execute(_SET, values)
    live = [job_id for job_id in found if job_id != ending.keep_job_id]
    return InstanceEnd(_ids(tasks), _ids(live), holds)


def _values(instance_id: int, ending: Ending) -> dict[str, Any]:
    return {
        "b_instance_id": instance_id,
        "status": ending.status,
        "finished_at": ending.now,
        "updated_at": ending.now,
    }


def _jobs(ending: Ending) -> dict[str, Any]:
    return {
        "b_job_types": sorted(ending.job_types),
        "b_job_statuses": sorted(ending.job_statuses),
        "b_keep_job_id": ending.keep_job_id,
    }


def _ended(row: Any, ending: Ending) -> InstanceEnd:
    holds = True if ending.also is None else bool(row.also)
    return InstanceEnd(_ids(row.open_task_ids), _ids(row.live_job_ids), holds)


async def core_end_instance_with_last_token(
    conn: AsyncConnection, instance_id: int, ending: Ending, *, token_id: int, at_node: str | None
) -> InstanceEnd | None:
    """Consume token ``token_id`` (moved to ``at_node`` as it is, when
    given; consumed ``ending.now``); when the instance has no other live
    token, end it as :func:`core_end_instance_row` does and return what
    that returns, else None (the instance goes on)."""
    if await consume_token_row(conn, token_id, now=ending.now, at_node=at_node):
        return None
    return await core_end_instance_row(conn, instance_id, ending)


async def pg_end_instance_with_last_token(
    conn: AsyncConnection, instance_id: int, ending: Ending, *, token_id: int, at_node: str | None
) -> InstanceEnd | None:
    """:func:`core_end_instance_with_last_token` in one statement (the
    consume a CTE; the ending conditional on no other live token)."""
    params = {
        **_values(instance_id, ending),
        **_jobs(ending),
        "b_token_id": token_id,
        "b_at_node": at_node,
        "b_consumed_at": ending.now,
    }
    row = (await conn.execute(_pg_end(ending.also, last_token=True), params)).first()
    if row is None:  # another token is live: the instance goes on
        return None
    return _ended(row, ending)
