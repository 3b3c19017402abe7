"""Compensation tickets and their history (SPEC C-8): the writes.

A ticket records one failure decision — the failed node, the error, the
ticket ``status`` an operator drives (pending / resolved / terminated) and
the automatic action's summary ``compensation_action_status`` (none /
pending / running / succeeded / failed, see
:mod:`flowledger.db.compensation_schema` for both diagrams). Every change
leaves a row in ``workflow_compensation_logs``: the ticket's history
timeline.

Every function works in the caller's transaction and may run inside an
engine step (the failure policies call :func:`open_ticket` there). Callers
that change a ticket lock the instance row first, then the ticket
(:func:`lock_ticket`), the order of SPEC L-13. This module never moves an
instance; :mod:`flowledger.compensation.operations` does.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.compensation_schema import (
    ActionStatus,
    LogKind,
    TicketStatus,
    workflow_compensation_logs,
    workflow_compensations,
)
from flowledger.db.dialects import upsert

tickets = workflow_compensations
logs = workflow_compensation_logs


async def add_log(
    conn: AsyncConnection,
    ticket_id: int,
    *,
    kind: str,
    actor: str,
    now: datetime,
    message: str | None = None,
    detail: dict[str, Any] | None = None,
    stored_name: str | None = None,
    original_name: str | None = None,
    content_type: str | None = None,
    size_bytes: int | None = None,
) -> int:
    """Append one history row to ticket ``ticket_id``; returns its id."""
    log_id = (
        await conn.execute(
            logs.insert()
            .values(
                compensation_id=ticket_id,
                kind=LogKind(kind).value,
                actor=actor,
                message=message,
                detail=detail,
                stored_name=stored_name,
                original_name=original_name,
                content_type=content_type,
                size_bytes=size_bytes,
                created_at=now,
            )
            .returning(logs.c.id)
        )
    ).scalar_one()
    return int(log_id)


async def open_ticket(
    conn: AsyncConnection,
    *,
    tenant_id: str,
    instance_id: int,
    failed_node_key: str,
    node_key: str,
    kind: str,
    status: str = TicketStatus.PENDING,
    error: str | None,
    action: dict[str, Any] | None,
    repair_task_id: int | None,
    idempotency_key: str | None,
    actor: str,
    now: datetime,
) -> tuple[int, bool]:
    """Create a ticket (with its ``created`` history row). Returns (id,
    created): an ``idempotency_key`` that already names a ticket returns
    that ticket, unchanged, and created=False (Saga registration, C-7).

    A ticket created ``resolved`` or ``terminated`` (the continue and
    terminate policies) is closed at once by ``actor``."""
    ticket_status = TicketStatus(status)
    closed = ticket_status is not TicketStatus.PENDING
    row = {
        "tenant_id": tenant_id,
        "instance_id": instance_id,
        "failed_node_key": failed_node_key,
        "node_key": node_key,
        "kind": kind,
        "status": ticket_status.value,
        "compensation_action_status": ActionStatus.NONE.value,
        "action_payload": action,
        "error": error,
        "repair_task_id": repair_task_id,
        "idempotency_key": idempotency_key,
        "created_by": actor,
        "created_at": now,
        "updated_at": now,
        "resolved_at": now if closed else None,
        "resolved_by": actor if closed else None,
    }
    stmt = (
        upsert(conn, tickets)
        .values(**row)
        .on_conflict_do_nothing(index_elements=[tickets.c.idempotency_key])
        .returning(tickets.c.id)
    )
    ticket_id = (await conn.execute(stmt)).scalar_one_or_none()
    if ticket_id is None:  # the idempotency key already names a ticket
        existing = await conn.execute(
            select(tickets.c.id).where(tickets.c.idempotency_key == idempotency_key)
        )
        return int(existing.scalar_one()), False
    await add_log(
        conn,
        int(ticket_id),
        kind=LogKind.CREATED,
        actor=actor,
        now=now,
        message=error,
        detail={
            "kind": kind,
            "status": ticket_status.value,
            "failedNodeKey": failed_node_key,
            "nodeKey": node_key,
            "repairTaskId": repair_task_id,
        },
    )
    return int(ticket_id), True


async def get_ticket(
    conn: AsyncConnection, ticket_id: int, *, lock: bool = False
) -> dict[str, Any] | None:
    """The ticket row (``lock``: FOR UPDATE — after the instance row)."""
    query = select(tickets).where(tickets.c.id == ticket_id)
    if lock:
        query = query.with_for_update()
    row = (await conn.execute(query)).mappings().first()
    return None if row is None else dict(row)


async def update_ticket(
    conn: AsyncConnection, ticket_id: int, *, now: datetime, **values: Any
) -> None:
    values["updated_at"] = now
    await conn.execute(update(tickets).where(tickets.c.id == ticket_id).values(**values))


async def close_ticket(
    conn: AsyncConnection,
    ticket_id: int,
    status: TicketStatus,
    *,
    log_kind: LogKind,
    actor: str,
    now: datetime,
    message: str | None = None,
    detail: dict[str, Any] | None = None,
) -> None:
    """Move a ticket to resolved or terminated, with its history row."""
    await update_ticket(
        conn, ticket_id, now=now, status=status.value, resolved_at=now, resolved_by=actor
    )
    await add_log(
        conn, ticket_id, kind=log_kind, actor=actor, now=now, message=message, detail=detail
    )


async def set_action_status(
    conn: AsyncConnection,
    ticket_id: int,
    status: ActionStatus,
    *,
    actor: str,
    now: datetime,
    message: str | None = None,
    detail: dict[str, Any] | None = None,
    **values: Any,
) -> None:
    """Record a change of the automatic action's summary (an
    ``action_result`` history row with the new status in its detail)."""
    await update_ticket(conn, ticket_id, now=now, compensation_action_status=status.value, **values)
    await add_log(
        conn,
        ticket_id,
        kind=LogKind.ACTION_RESULT,
        actor=actor,
        now=now,
        message=message,
        detail={"status": status.value, **(detail or {})},
    )
