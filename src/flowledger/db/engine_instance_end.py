"""The statement that ends an instance's row (SPEC E-6; issue 15 item 2;
issue 16: the dialect choice stays in ``db/``): its status, ``finished_at``
and ``updated_at`` set, and the ids of its open (pending or waiting) tasks
read — the tasks the ending closes. PostgreSQL: one statement (the ids come
back in its RETURNING, read in the statement's snapshot, before anything
else of the step changes them). SQLite (in process): the read, then the
update."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, bindparam, literal_column, select, update
from sqlalchemy.dialects.postgresql import ARRAY
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.dialects import POSTGRESQL, dialect_name
from flowledger.db.engine_schema import workflow_instances, workflow_tasks
from flowledger.states import TaskStatus

OPEN = (TaskStatus.PENDING.value, TaskStatus.WAITING.value)

_SET = update(workflow_instances).where(workflow_instances.c.id == bindparam("b_instance_id"))
_PG_END = _SET.returning(
    literal_column(
        "ARRAY(SELECT o.id FROM workflow_tasks AS o "
        "WHERE o.instance_id = workflow_instances.id "
        f"AND o.status IN ('{OPEN[0]}', '{OPEN[1]}') ORDER BY o.id)",
        ARRAY(BigInteger()),
    ).label("open_task_ids")
)
_OPEN_IDS = (
    select(workflow_tasks.c.id)
    .where(
        workflow_tasks.c.instance_id == bindparam("b_instance_id"),
        workflow_tasks.c.status.in_(OPEN),
    )
    .order_by(workflow_tasks.c.id)
)


async def end_instance_row(
    conn: AsyncConnection, instance_id: int, *, status: str, now: datetime
) -> list[int]:
    """Set the instance's ``status`` and its ``finished_at`` and
    ``updated_at`` to ``now``; the ids of its open tasks, ascending."""
    values: dict[str, Any] = {
        "b_instance_id": instance_id,
        "status": status,
        "finished_at": now,
        "updated_at": now,
    }
    if dialect_name(conn) == POSTGRESQL:
        ids = (await conn.execute(_PG_END, values)).scalar_one()
        return [int(task_id) for task_id in ids]
    found = (await conn.execute(_OPEN_IDS, {"b_instance_id": instance_id})).scalars().all()
    await conn.execute(_SET, values)
    return [int(task_id) for task_id in found]
