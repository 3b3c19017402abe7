"""What a migration reads (issue 30): the source and target versions of the
definition, the selected instances, and per instance everything the dry run
needs — its row, live tokens, fork frames, tasks of its live tokens and its
open tasks, unfinished jobs and running children — in a few statements per
chunk of instances, so a dry run of 10,000 instances is a few dozen reads.
:func:`lock_state` reads one instance the same way after locking its row
(the run's re-check under the lock)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import (
    users,
    workflow_definitions,
    workflow_forks,
    workflow_instances,
    workflow_tasks,
    workflow_tokens,
)
from flowledger.db.schema import workflow_jobs
from flowledger.definitions.model import ProcessDefinition
from flowledger.ops.migration.model import MAX_IDS, MigrationInvalid, MigrationPlan
from flowledger.states import InstanceStatus, JobStatus, TaskStatus, TokenState

CHUNK = 500
OPEN_TASKS = (TaskStatus.PENDING.value, TaskStatus.WAITING.value)
UNFINISHED_JOBS = (JobStatus.PENDING.value, JobStatus.RUNNING.value, JobStatus.PAUSED.value)
# the job types whose finished rows the O-16 rules look at on a prediction
DISPATCH_JOBS = ("trigger_dispatch", "external_dispatch")


@dataclass(frozen=True)
class Version:
    id: int
    version: int
    source: dict[str, Any]
    defn: ProcessDefinition


@dataclass
class InstanceState:
    instance: Any
    tokens: list[Any] = field(default_factory=list)
    forks: dict[int, Any] = field(default_factory=dict)
    tasks: list[Any] = field(default_factory=list)
    jobs: list[Any] = field(default_factory=list)
    children: dict[int, list[int]] = field(default_factory=dict)
    #: per open task, the ``(type, status)`` of its finished jobs of
    #: :data:`DISPATCH_JOBS` (whether a dispatch ran, or broke: O-16)
    finished_jobs: dict[int, set[tuple[str, str]]] = field(default_factory=dict)


async def load_versions(
    conn: AsyncConnection, tenant: str, key: str, versions: list[int], field_name: str
) -> dict[int, Version]:
    d = workflow_definitions.c
    rows = (
        await conn.execute(
            select(d.id, d.version, d.source).where(
                d.tenant_id == tenant, d.key == key, d.version.in_(versions)
            )
        )
    ).all()
    found = {
        int(r.version): Version(
            int(r.id), int(r.version), r.source, ProcessDefinition.model_validate(r.source)
        )
        for r in rows
    }
    missing = sorted(set(versions) - set(found))
    if missing:
        raise MigrationInvalid(
            f"{key!r} has no version {', '.join(map(str, missing))}", field=field_name
        )
    return found


async def load_users(conn: AsyncConnection) -> list[Any]:
    query = select(users.c.id, users.c.roles, users.c.tenants).order_by(users.c.id)
    return list((await conn.execute(query)).all())


async def select_instance_ids(
    conn: AsyncConnection, plan: MigrationPlan, now: datetime
) -> list[int]:
    """The plan's instances of its definition and source versions, by id."""
    i = workflow_instances.c
    query = select(i.id).where(
        i.definition_key == plan.definition_key,
        i.definition_version.in_(plan.from_versions),
        i.tenant_id == plan.tenant,
    )
    if plan.instance_ids is not None:
        query = query.where(i.id.in_(plan.instance_ids))
    else:
        if plan.filter is not None:
            query = query.where(*plan.filter.conditions(now))
        if plan.filter is None or not plan.filter.statuses:
            query = query.where(
                i.status.in_([InstanceStatus.RUNNING.value, InstanceStatus.SUSPENDED.value])
            )
    if plan.tenants is not None:
        query = query.where(i.tenant_id.in_(plan.tenants))
    ids = [int(r) for r in (await conn.execute(query.order_by(i.id).limit(MAX_IDS + 1))).scalars()]
    if len(ids) > MAX_IDS:
        raise MigrationInvalid(
            f"the plan selects more than {MAX_IDS} instances; narrow the filter",
            field="filter",
        )
    if plan.instance_ids is not None:
        unknown = sorted(set(plan.instance_ids) - set(ids))
        if unknown:
            raise MigrationInvalid(
                f"instances {unknown[:10]} are not instances of {plan.definition_key!r} "
                f"version {list(plan.from_versions)}",
                field="instanceIds",
            )
    return ids


async def load_states(conn: AsyncConnection, ids: list[int]) -> dict[int, InstanceState]:
    """Every instance of ``ids`` with its live tokens, frames, tasks, jobs, children."""
    out: dict[int, InstanceState] = {}
    for start in range(0, len(ids), CHUNK):
        await _load_chunk(conn, ids[start : start + CHUNK], out)
    return out


async def _rows(conn: AsyncConnection, query: Any) -> list[Any]:
    return list((await conn.execute(query)).all())


async def _load_chunk(conn: AsyncConnection, ids: list[int], out: dict[int, InstanceState]) -> None:
    i = workflow_instances.c
    for row in await _rows(
        conn,
        select(
            i.id,
            i.tenant_id,
            i.status,
            i.definition_key,
            i.definition_version,
            i.form_data,
            i.initiator,
            i.trace_id,
            i.parent_instance_id,
        ).where(i.id.in_(ids)),
    ):
        out[int(row.id)] = InstanceState(row)
    t = workflow_tokens.c
    live: dict[int, int] = {}
    for row in await _rows(
        conn,
        select(t.id, t.instance_id, t.node_key, t.state, t.fork_stack)
        .where(t.instance_id.in_(ids), t.state != TokenState.CONSUMED.value)
        .order_by(t.id),
    ):
        out[int(row.instance_id)].tokens.append(row)
        live[int(row.id)] = int(row.instance_id)
    f = workflow_forks.c
    for row in await _rows(
        conn, select(f.id, f.instance_id, f.node_key, f.expected).where(f.instance_id.in_(ids))
    ):
        out[int(row.instance_id)].forks[int(row.id)] = row
    k = workflow_tasks.c
    task_query = select(
        k.id, k.instance_id, k.node_key, k.token_id, k.kind, k.status, k.assignee, k.due_at
    ).where(k.instance_id.in_(ids))
    task_query = task_query.where(
        or_(k.status.in_(OPEN_TASKS), k.token_id.in_(list(live)) if live else k.id < 0)
    )
    open_ids: list[int] = []
    for row in await _rows(conn, task_query.order_by(k.id)):
        out[int(row.instance_id)].tasks.append(row)
        if row.status in OPEN_TASKS and row.kind in ("trigger", "external_approval"):
            open_ids.append(int(row.id))
    j = workflow_jobs.c
    for row in await _rows(
        conn,
        select(j.id, j.instance_id, j.type, j.node_key, j.task_id, j.run_at, j.status)
        .where(j.instance_id.in_(ids), j.status.in_(UNFINISHED_JOBS))
        .order_by(j.id),
    ):
        out[int(row.instance_id)].jobs.append(row)
    if open_ids:
        for row in await _rows(
            conn,
            select(j.instance_id, j.task_id, j.type, j.status)
            .where(
                j.instance_id.in_(ids),
                j.task_id.in_(open_ids),
                j.type.in_(DISPATCH_JOBS),
                j.status.not_in(UNFINISHED_JOBS),
            )
            .distinct(),
        ):
            found = out[int(row.instance_id)].finished_jobs
            found.setdefault(int(row.task_id), set()).add((str(row.type), str(row.status)))
    children: dict[int, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for row in await _rows(
        conn,
        select(i.id, i.parent_instance_id, i.parent_task_id)
        .where(i.parent_instance_id.in_(ids), i.status.in_(["running", "suspended"]))
        .order_by(i.id),
    ):
        children[int(row.parent_instance_id)][int(row.parent_task_id or 0)].append(int(row.id))
    for parent, by_task in children.items():
        out[parent].children = dict(by_task)


async def lock_state(conn: AsyncConnection, instance_id: int) -> InstanceState | None:
    """Lock the instance row (first, L-13), then read its state."""
    found = (
        await conn.execute(
            select(workflow_instances.c.id)
            .where(workflow_instances.c.id == instance_id)
            .with_for_update()
        )
    ).first()
    if found is None:
        return None
    return (await load_states(conn, [instance_id])).get(instance_id)
