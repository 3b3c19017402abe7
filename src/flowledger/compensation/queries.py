"""Read-only queries over compensation tickets (SPEC C-8, C-9) for the API
and the console: the list (filters status and instance, newest first, keyset
paged by id, limited to the visible tenants) and one ticket's detail — its
error, action, history timeline, the action's job as the ledger sees it
(the authority while a job waits for a retry or a confirmation) and its
repair tasks. Nothing here writes or locks.

Every filter combination is served by an index of
:mod:`flowledger.db.compensation_schema`: ``(tenant_id, status, id)``,
``(status, id)`` and ``(instance_id, id)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import ColumnElement, false, select, true
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.compensation.tickets import logs, tickets
from flowledger.db.compensation_schema import ActionStatus
from flowledger.db.engine_schema import workflow_instances, workflow_tasks
from flowledger.db.schema import workflow_jobs
from flowledger.states import JobStatus

Tenants = Sequence[str] | None


@dataclass(frozen=True)
class TicketPage:
    items: list[dict[str, Any]]
    next_after: int | None


def _in_tenants(tenants: Tenants) -> ColumnElement[bool]:
    if tenants is None:
        return true()
    if not tenants:
        return false()
    return tickets.c.tenant_id.in_(list(tenants))


async def list_tickets(
    conn: AsyncConnection,
    *,
    tenants: Tenants,
    status: str | None = None,
    instance_id: int | None = None,
    after_id: int | None = None,
    limit: int = 50,
) -> TicketPage:
    job_status = workflow_jobs.c.status.label("action_job_status")
    query = (
        select(tickets, job_status)
        .select_from(
            tickets.outerjoin(workflow_jobs, workflow_jobs.c.id == tickets.c.action_job_id)
        )
        .where(_in_tenants(tenants))
    )
    if status is not None:
        query = query.where(tickets.c.status == status)
    if instance_id is not None:
        query = query.where(tickets.c.instance_id == instance_id)
    if after_id is not None:
        query = query.where(tickets.c.id < after_id)
    rows = (await conn.execute(query.order_by(tickets.c.id.desc()).limit(limit + 1))).mappings()
    items = []
    for row in rows.all():
        item = dict(row)
        shown = effective_action_status(
            item["compensation_action_status"], item.pop("action_job_status")
        )
        item["compensation_action_status"] = shown
        items.append(item)
    if len(items) <= limit:
        return TicketPage(items, None)
    items = items[:limit]
    return TicketPage(items, int(items[-1]["id"]))


async def get_ticket(
    conn: AsyncConnection, ticket_id: int, *, tenants: Tenants
) -> dict[str, Any] | None:
    row = (
        (await conn.execute(select(tickets).where(tickets.c.id == ticket_id, _in_tenants(tenants))))
        .mappings()
        .first()
    )
    return None if row is None else dict(row)


async def ticket_logs(conn: AsyncConnection, ticket_id: int) -> list[dict[str, Any]]:
    rows = await conn.execute(
        select(logs).where(logs.c.compensation_id == ticket_id).order_by(logs.c.id)
    )
    return [dict(r) for r in rows.mappings().all()]


async def get_log(conn: AsyncConnection, ticket_id: int, log_id: int) -> dict[str, Any] | None:
    row = (
        (
            await conn.execute(
                select(logs).where(logs.c.id == log_id, logs.c.compensation_id == ticket_id)
            )
        )
        .mappings()
        .first()
    )
    return None if row is None else dict(row)


async def ticket_detail(
    conn: AsyncConnection, ticket_id: int, *, tenants: Tenants
) -> dict[str, Any] | None:
    """The ticket with ``logs``, ``instance_status``, ``action_job`` and
    ``repair_tasks`` (the catch tasks at the failed node sharing the repair
    task's token)."""
    ticket = await get_ticket(conn, ticket_id, tenants=tenants)
    if ticket is None:
        return None
    ticket["logs"] = await ticket_logs(conn, ticket_id)
    ticket["instance_status"] = (
        await conn.execute(
            select(workflow_instances.c.status).where(
                workflow_instances.c.id == ticket["instance_id"]
            )
        )
    ).scalar_one_or_none()
    ticket["action_job"] = None
    if ticket["action_job_id"] is not None:
        job = (
            (
                await conn.execute(
                    select(
                        workflow_jobs.c.id,
                        workflow_jobs.c.status,
                        workflow_jobs.c.attempts,
                        workflow_jobs.c.max_attempts,
                        workflow_jobs.c.generation,
                        workflow_jobs.c.run_at,
                        workflow_jobs.c.last_error,
                        workflow_jobs.c.last_error_code,
                    ).where(workflow_jobs.c.id == ticket["action_job_id"])
                )
            )
            .mappings()
            .first()
        )
        ticket["action_job"] = None if job is None else dict(job)
        ticket["compensation_action_status"] = effective_action_status(
            ticket["compensation_action_status"], None if job is None else job["status"]
        )
    ticket["repair_tasks"] = await _repair_tasks(conn, ticket)
    return ticket


def effective_action_status(summary: str, job_status: str | None) -> str:
    """The action status to show: the ledger is the authority (C-8). A job
    that ended without its handler saying so — dead by the drain after a
    killed worker, skipped or canceled by an operator — leaves the summary at
    pending/running; it is shown as failed."""
    ended_unreported = job_status in (JobStatus.DEAD, JobStatus.CANCELED, JobStatus.FAILED)
    if summary in (ActionStatus.PENDING, ActionStatus.RUNNING) and ended_unreported:
        return ActionStatus.FAILED.value
    return summary


async def _repair_tasks(conn: AsyncConnection, ticket: dict[str, Any]) -> list[dict[str, Any]]:
    """The repair task and its copies for the other administrators (created
    in the same step, at the same node, on the same token)."""
    if ticket["repair_task_id"] is None:
        return []
    first = (
        (
            await conn.execute(
                select(workflow_tasks).where(workflow_tasks.c.id == ticket["repair_task_id"])
            )
        )
        .mappings()
        .first()
    )
    if first is None or first["token_id"] is None:
        return [] if first is None else [dict(first)]
    rows = await conn.execute(
        select(workflow_tasks)
        .where(
            workflow_tasks.c.instance_id == first["instance_id"],
            workflow_tasks.c.token_id == first["token_id"],
            workflow_tasks.c.node_key == first["node_key"],
            workflow_tasks.c.kind == first["kind"],
            workflow_tasks.c.created_at == first["created_at"],
            workflow_tasks.c.id >= first["id"],
        )
        .order_by(workflow_tasks.c.id)
    )
    return [dict(r) for r in rows.mappings().all()]
