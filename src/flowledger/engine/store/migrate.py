"""The write of one instance's migration to another definition version
(issue 30): what :meth:`~flowledger.engine.store.protocol.EngineStore.instance_migrate`
sends, inside the caller's transaction with the instance row already locked
(L-13). The caller (the migration service, ``ops/migration``) decides what
moves where; this module only writes it, portable Core, one statement per
kind:

- the instance row: definition id, version, snapshot and form (new field
  values merged), ``updated_at``;
- live tokens re-pointed to their target nodes; fork frames to their
  target gateways;
- open tasks re-pointed (node), tasks of assignees no longer on their node
  skipped with the migration's comment, tasks for new assignees inserted;
- the instance's unfinished jobs re-pointed to the target nodes through the
  ledger driver (``jobs_retarget``: only the driver writes the ledger's
  tables) — their ``run_at`` (wake times, timeouts) and payloads untouched,
  so times carry over and a dispatch goes to the target node's task;
- timeouts (SPEC E-5): a ``task_timeout`` job for each pending task that
  lands on a node newly declaring a timeout (and for each new task on a
  node with one), its ``due_at`` set; the ``task_timeout`` jobs of tasks
  whose target node declares none, or that are skipped, canceled (through
  the driver too) and the task's ``due_at`` cleared;
- one ``instance_migrated`` trace row."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, insert, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import (
    workflow_forks,
    workflow_instances,
    workflow_tasks,
    workflow_tokens,
    workflow_trace,
)
from flowledger.engine.job_types import engine_job_type
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import JobSpec
from flowledger.states import TaskStatus


@dataclass(frozen=True)
class NewTask:
    """A pending task the migration creates for an assignee the target node
    adds (its assignee rule changed)."""

    node_key: str
    token_id: int
    kind: str
    assignee: str
    #: the timeout's due time when the target node declares one (a
    #: ``task_timeout`` job is enqueued for the task at that time)
    due_at: datetime | None = None


@dataclass(frozen=True)
class NewTimeout:
    """A ``task_timeout`` job for an existing pending task whose target node
    declares a timeout its source node did not."""

    task_id: int
    node_key: str
    due_at: datetime


@dataclass
class InstanceMigration:
    """Everything one instance's migration writes (ids are the instance's)."""

    instance_id: int
    tenant_id: str
    definition_key: str
    trace_id: str
    definition_id: int
    definition_version: int
    snapshot: dict[str, Any]
    form_data: dict[str, Any]
    now: datetime
    actor: str
    token_nodes: dict[int, str] = field(default_factory=dict)
    frame_nodes: dict[int, str] = field(default_factory=dict)
    task_nodes: dict[int, str] = field(default_factory=dict)
    job_nodes: dict[int, str] = field(default_factory=dict)
    skip_tasks: list[int] = field(default_factory=list)
    skip_comment: str = ""
    new_tasks: list[NewTask] = field(default_factory=list)
    new_timeouts: list[NewTimeout] = field(default_factory=list)
    #: open tasks whose due time changes (a timeout added, or dropped: None)
    task_due: dict[int, datetime | None] = field(default_factory=dict)
    cancel_jobs: list[int] = field(default_factory=list)
    trace_detail: dict[str, Any] = field(default_factory=dict)


def _moves(table: Any, moves: dict[int, str]) -> tuple[Any, list[dict[str, Any]]]:
    statement = (
        update(table).where(table.c.id == bindparam("b_id")).values(node_key=bindparam("b_node"))
    )
    return statement, [{"b_id": key, "b_node": node} for key, node in sorted(moves.items())]


async def core_migrate_instance(
    conn: AsyncConnection, ledger: LedgerDriver, m: InstanceMigration
) -> list[int]:
    """Write ``m``; the ids of the tasks it created, in the order of ``m.new_tasks``."""
    await conn.execute(
        update(workflow_instances)
        .where(workflow_instances.c.id == m.instance_id)
        .values(
            definition_id=m.definition_id,
            definition_version=m.definition_version,
            snapshot=m.snapshot,
            form_data=m.form_data,
            updated_at=m.now,
        )
    )
    for table, moves in (
        (workflow_tokens, m.token_nodes),
        (workflow_forks, m.frame_nodes),
        (workflow_tasks, m.task_nodes),
    ):
        if moves:
            statement, params = _moves(table, moves)
            await conn.execute(statement, params)
    await ledger.jobs_retarget(conn, m.job_nodes, now=m.now)
    for job_id in m.cancel_jobs:
        await ledger.job_cancel(
            conn, job_id, now=m.now, reason="instance migrated: the node declares no timeout"
        )
    if m.skip_tasks:
        await conn.execute(
            update(workflow_tasks)
            .where(workflow_tasks.c.id.in_(m.skip_tasks))
            .values(
                status=TaskStatus.SKIPPED,
                comment=m.skip_comment,
                finished_at=m.now,
                finished_by=m.actor,
            )
        )
    created: list[int] = []
    for task in m.new_tasks:
        row = {
            "instance_id": m.instance_id,
            "tenant_id": m.tenant_id,
            "definition_key": m.definition_key,
            "node_key": task.node_key,
            "token_id": task.token_id,
            "kind": task.kind,
            "status": TaskStatus.PENDING,
            "assignee": task.assignee,
            "due_at": task.due_at,
            "created_at": m.now,
        }
        result = await conn.execute(
            insert(workflow_tasks).values(**row).returning(workflow_tasks.c.id)
        )
        created.append(int(result.scalar_one()))
    timeouts = [NewTimeout(t.task_id, t.node_key, t.due_at) for t in m.new_timeouts]
    timeouts += [
        NewTimeout(task_id, task.node_key, task.due_at)
        for task_id, task in zip(created, m.new_tasks, strict=True)
        if task.due_at is not None
    ]
    if m.task_due:
        await conn.execute(
            update(workflow_tasks)
            .where(workflow_tasks.c.id == bindparam("b_id"))
            .values(due_at=bindparam("b_due")),
            [{"b_id": key, "b_due": due} for key, due in sorted(m.task_due.items())],
        )
    jobs = (
        await ledger.jobs_insert(conn, [_timeout_job(m, t) for t in timeouts], now=m.now)
        if timeouts
        else []
    )
    await conn.execute(
        insert(workflow_trace).values(
            instance_id=m.instance_id,
            trace_id=m.trace_id,
            event="instance_migrated",
            detail={
                **m.trace_detail,
                "createdTasks": created,
                "createdJobs": [j.job_id for j in jobs],
                "canceledJobs": list(m.cancel_jobs),
            },
            created_at=m.now,
        )
    )
    return created


def _timeout_job(m: InstanceMigration, timeout: NewTimeout) -> JobSpec:
    """The ``task_timeout`` job the engine would have enqueued on entering
    the node (:func:`~flowledger.engine.nodes.people.enter_human`)."""
    return JobSpec(
        type=engine_job_type("task_timeout"),
        payload={"taskId": timeout.task_id},
        run_at=timeout.due_at,
        trace_id=m.trace_id,
        tenant_id=m.tenant_id,
        instance_id=m.instance_id,
        task_id=timeout.task_id,
        node_key=timeout.node_key,
    )
