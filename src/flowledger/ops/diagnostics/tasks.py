"""The task, form and definition views of an instance's diagnostics (SPEC
O-10, E-5, E-7): every task with its assignee, action, duration and status
(cc tasks marked ``cc: true``), the form data with its write history from
``workflow_form_writes`` (who or what wrote which fields, oldest first), and
the frozen definition snapshot.

Indexes: ``ix_workflow_tasks_instance``, ``ix_workflow_form_writes_instance``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_form_writes as writes
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.states import TaskStatus

_OPEN = (TaskStatus.PENDING, TaskStatus.WAITING)


def _duration_ms(row: Any, now: datetime) -> int | None:
    if row["status"] == TaskStatus.CC:
        return None
    end = row["finished_at"] or (now if row["status"] in _OPEN else None)
    if end is None:
        return None
    return int((end - row["created_at"]).total_seconds() * 1000)


async def tasks_view(
    conn: AsyncConnection, instance_id: int, *, now: datetime
) -> list[dict[str, Any]]:
    rows = (
        (
            await conn.execute(
                select(tasks).where(tasks.c.instance_id == instance_id).order_by(tasks.c.id)
            )
        )
        .mappings()
        .all()
    )
    return [
        {
            "id": int(r["id"]),
            "nodeKey": r["node_key"],
            "kind": r["kind"],
            "status": r["status"],
            "cc": r["kind"] == "cc" or r["status"] == TaskStatus.CC,
            "assignee": r["assignee"],
            "action": r["action"],
            "comment": r["comment"],
            "tokenId": r["token_id"],
            "dueAt": r["due_at"],
            "createdAt": r["created_at"],
            "finishedAt": r["finished_at"],
            "finishedBy": r["finished_by"],
            "durationMs": _duration_ms(r, now),
            "open": r["status"] in _OPEN,
        }
        for r in rows
    ]


async def form_view(conn: AsyncConnection, instance: dict[str, Any]) -> dict[str, Any]:
    rows = (
        (
            await conn.execute(
                select(writes).where(writes.c.instance_id == instance["id"]).order_by(writes.c.id)
            )
        )
        .mappings()
        .all()
    )
    return {
        "data": instance["form_data"],
        "history": [
            {
                "id": int(r["id"]),
                "writtenBy": r["written_by"],
                "source": r["source"],
                "changes": r["changes"],
                "createdAt": r["created_at"],
            }
            for r in rows
        ],
    }


def definition_view(instance: dict[str, Any]) -> dict[str, Any]:
    return {
        "definitionId": instance["definition_id"],
        "key": instance["definition_key"],
        "version": instance["definition_version"],
        "snapshot": instance["snapshot"],
    }
