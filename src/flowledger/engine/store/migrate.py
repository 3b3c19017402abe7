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
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.states import TaskStatus


@dataclass(frozen=True)
class NewTask:
    """A pending task the migration creates for an assignee the target node
    adds (its assignee rule changed)."""

    node_key: str
    token_id: int
    kind: str
    assignee: str


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
            "created_at": m.now,
        }
        result = await conn.execute(
            insert(workflow_tasks).values(**row).returning(workflow_tasks.c.id)
        )
        created.append(int(result.scalar_one()))
    await conn.execute(
        insert(workflow_trace).values(
            instance_id=m.instance_id,
            trace_id=m.trace_id,
            event="instance_migrated",
            detail={**m.trace_detail, "createdTasks": created},
            created_at=m.now,
        )
    )
    return created
