"""Operator actions on compensation tickets (SPEC C-9): resume, retry,
release (``action=resolve``), terminate and notes. Each is one transaction
that locks the instance row, then the ticket (L-13), re-checks the state
under those locks and writes its history row with the change; the API adds
the permission and tenant checks and the audit row.

=================  ===========================================  ==================
operation          allowed when                                 refused (409 code)
=================  ===========================================  ==================
resume             ticket pending, instance running, its        ticket_not_pending,
                   repair task pending with an active token     instance_suspended,
                   at the failed node                           instance_not_running,
                                                                ticket_not_resumable,
                                                                repair_task_closed
retry              action status failed (or its job is dead /   action_not_failed,
                   failed / canceled in the ledger) and a       action_invalid
                   valid C-4 action
release            ticket pending                               ticket_not_pending
terminate          ticket pending                               ticket_not_pending
note               any ticket status                            —
=================  ===========================================  ==================

- resume completes the repair task (the other administrators' copies are
  canceled), resolves the ticket and continues the failed node's token along
  the node's first outgoing edge (``moves.leave``), running the flow to its
  next wait state in the same transaction.
- retry enqueues a **new** ``compensation_action`` job (a new id and
  operationKey); the earlier job and its attempts stay as they were.
- release closes the ticket only; it neither continues nor stops the flow.
- terminate rejects a live instance (pending and waiting tasks skipped,
  tokens consumed, advancement jobs canceled: the cleanup of L-22); a ticket
  of an instance that already ended is just marked terminated.

Each of the four records the instance's intervention (issue 31,
:mod:`flowledger.engine.interventions`: ``compensation_resume`` /
``_retry`` / ``_release`` / ``_terminate``, with the ticket's status or its
action's job before → after) in its transaction; a note changes nothing on
the instance and records none.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.access.audit import AuditEntry, change_transaction
from flowledger.actions.runner import SYSTEM_ACTOR
from flowledger.compensation.actions import enqueue_action, parse_action
from flowledger.compensation.errors import (
    ActionNotFailed,
    InstanceNotRunning,
    InstanceSuspended,
    RepairTaskClosed,
    TicketNotFound,
    TicketNotPending,
    TicketNotResumable,
)
from flowledger.compensation.tickets import (
    add_log,
    close_ticket,
    get_ticket,
    logs,
    set_action_status,
    tickets,
    update_ticket,
)
from flowledger.db.compensation_schema import ActionStatus, LogKind, TicketStatus
from flowledger.db.schema import workflow_jobs
from flowledger.engine import Engine, interventions, lifecycle, runner
from flowledger.engine.moves import leave
from flowledger.engine.step import Step, lock_instance
from flowledger.engine.tasks import close_open_tasks, finish_task, lock_task, open_tasks
from flowledger.engine.tokens import get_token
from flowledger.states import InstanceStatus, JobStatus, TaskStatus, TokenState

_JOB_GAVE_UP = (JobStatus.DEAD, JobStatus.FAILED, JobStatus.CANCELED)
_JOB_ACTIVE = (JobStatus.PENDING, JobStatus.RUNNING, JobStatus.PAUSED)


@dataclass(frozen=True)
class Attachment:
    """A file already stored under the attachments directory."""

    stored_name: str
    original_name: str
    content_type: str
    size_bytes: int


async def _instance_of(engine: Engine, ticket_id: int) -> int:
    async with engine.db.read() as conn:
        instance_id = (
            await conn.execute(select(tickets.c.instance_id).where(tickets.c.id == ticket_id))
        ).scalar_one_or_none()
    if instance_id is None:
        raise TicketNotFound(f"compensation ticket {ticket_id} not found", field="id")
    return int(instance_id)


async def _locked(conn: AsyncConnection, ticket_id: int) -> dict[str, Any]:
    ticket = await get_ticket(conn, ticket_id, lock=True)
    if ticket is None:
        raise TicketNotFound(f"compensation ticket {ticket_id} not found", field="id")
    return ticket


def _ticket_status(ticket: dict[str, Any], after: str) -> interventions.Change:
    return interventions.change(f"ticket.{ticket['id']}.status", ticket["status"], str(after))


def _require_pending(ticket: dict[str, Any]) -> None:
    if ticket["status"] != TicketStatus.PENDING:
        raise TicketNotPending(
            f"compensation ticket {ticket['id']} is {ticket['status']}, not pending",
            field="status",
            status=ticket["status"],
        )


async def resume(engine: Engine, ticket_id: int, *, actor: str, reason: str | None = None) -> None:
    """Finish the repair task, resolve the ticket, continue past the failed node."""
    instance_id = await _instance_of(engine, ticket_id)
    async with engine.db.begin() as conn, engine.step(conn, instance_id, actor) as step:
        ticket = await _locked(conn, ticket_id)
        _require_pending(ticket)
        status = step.instance["status"]
        if status == InstanceStatus.SUSPENDED:
            raise InstanceSuspended(
                f"instance {instance_id} is suspended; resume the instance before the ticket",
                field="instanceId",
                status=status,
            )
        if status != InstanceStatus.RUNNING:
            raise InstanceNotRunning(
                f"instance {instance_id} is {status}, not running",
                field="instanceId",
                status=status,
            )
        await _continue(step, ticket, reason)


async def _continue(step: Step, ticket: dict[str, Any], reason: str | None) -> None:
    task_id = ticket["repair_task_id"]
    if task_id is None:
        raise TicketNotResumable(
            f"compensation ticket {ticket['id']} has no repair task to resume",
            field="repairTaskId",
        )
    task = await lock_task(step, int(task_id))
    if task is None or task.status != TaskStatus.PENDING:
        status = None if task is None else task.status
        raise RepairTaskClosed(
            f"repair task {task_id} is {status or 'gone'}, not pending; resolve the ticket instead",
            field="repairTaskId",
            status=status,
        )
    found = await get_token(step, task.token_id) if task.token_id is not None else None
    if found is None or found[1] != TokenState.ACTIVE or found[0].node_key != task.node_key:
        raise RepairTaskClosed(
            f"repair task {task_id} at {task.node_key!r} holds no active token; "
            "repair the instance with a force jump",
            field="repairTaskId",
        )
    token = found[0]
    comment = f"[compensation ticket {ticket['id']} resumed]" + (f" {reason}" if reason else "")
    await finish_task(step, task.id, status=TaskStatus.COMPLETED, action="handle", comment=comment)
    await close_open_tasks(step, status=TaskStatus.CANCELED, token_id=token.id, comment=comment)
    await close_ticket(
        step.conn,
        int(ticket["id"]),
        TicketStatus.RESOLVED,
        log_kind=LogKind.RESUME,
        actor=step.actor,
        now=step.now,
        message=reason,
        detail={"repairTaskId": task.id, "nodeKey": task.node_key, "tokenId": token.id},
    )
    await step.trace(
        "compensation_resumed",
        node_key=task.node_key,
        token_id=token.id,
        task_id=task.id,
        detail={"ticketId": ticket["id"], "reason": reason},
    )
    await interventions.record_in_step(
        step,
        interventions.COMPENSATION_RESUME,
        reason=reason,
        node_key=task.node_key,
        task_id=task.id,
        changes=[
            _ticket_status(ticket, TicketStatus.RESOLVED),
            interventions.change(f"task.{task.id}.status", task.status, TaskStatus.COMPLETED.value),
        ],
    )
    node = step.defn.node(task.node_key)
    await runner.run(step, await leave(step, token, node))


async def _job_status(conn: AsyncConnection, job_id: int | None) -> str | None:
    if job_id is None:
        return None
    status = (
        await conn.execute(select(workflow_jobs.c.status).where(workflow_jobs.c.id == job_id))
    ).scalar_one_or_none()
    return None if status is None else str(status)


async def retry(engine: Engine, ticket_id: int, *, actor: str, reason: str | None = None) -> int:
    """Enqueue a new job for the ticket's failed action; returns its id."""
    instance_id = await _instance_of(engine, ticket_id)
    now = engine.clock.now()
    async with engine.db.begin() as conn:
        instance = await lock_instance(conn, instance_id)
        ticket = await _locked(conn, ticket_id)
        status = ticket["compensation_action_status"]
        job_status = await _job_status(conn, ticket["action_job_id"])
        if status in (ActionStatus.PENDING, ActionStatus.RUNNING) and job_status in _JOB_GAVE_UP:
            # the job ended without its handler saying so (e.g. reclaimed dead
            # by the drain, or skipped by an operator): the ledger is the authority
            status = ActionStatus.FAILED
            await set_action_status(
                conn,
                ticket_id,
                ActionStatus.FAILED,
                actor=SYSTEM_ACTOR,
                now=now,
                message=f"job {ticket['action_job_id']} is {job_status} in the job ledger",
                detail={"jobId": ticket["action_job_id"], "jobStatus": job_status},
            )
        if status != ActionStatus.FAILED or job_status in _JOB_ACTIVE:
            shown = f"{status} (job {job_status})" if job_status in _JOB_ACTIVE else status
            raise ActionNotFailed(
                f"compensation ticket {ticket_id}'s action is {shown}; only a failed action "
                "can be retried",
                field="compensationActionStatus",
                status=status,
            )
        parse_action(ticket["action_payload"])
        log_id = await add_log(
            conn,
            ticket_id,
            kind=LogKind.RETRY,
            actor=actor,
            now=now,
            message=reason,
            detail={"previousJobId": ticket["action_job_id"]},
        )
        job_id = await enqueue_action(
            conn,
            ticket_id=ticket_id,
            tenant_id=str(ticket["tenant_id"]),
            instance_id=instance_id,
            trace_id=str(instance["trace_id"]),
            node_key=str(ticket["node_key"]),
            action=ticket["action_payload"],
            error=ticket["error"],
            now=now,
            ledger=engine.store.ledger,
        )
        await conn.execute(
            update(logs)
            .where(logs.c.id == log_id)
            .values(detail={"previousJobId": ticket["action_job_id"], "jobId": job_id})
        )
        await interventions.record(
            conn,
            instance_id,
            interventions.COMPENSATION_RETRY,
            actor=actor,
            reason=reason,
            changes=[
                interventions.change(
                    f"ticket.{ticket_id}.actionJob", ticket["action_job_id"], job_id
                ),
                interventions.change(f"job.{job_id}.status", None, JobStatus.PENDING.value),
            ],
            now=now,
            trace_id=str(instance["trace_id"]),
            node_key=str(ticket["node_key"]),
            job_id=job_id,
        )
    return job_id


async def release(engine: Engine, ticket_id: int, *, actor: str, reason: str | None = None) -> None:
    """``action=resolve``: pending → resolved; the ticket only (C-9)."""
    instance_id = await _instance_of(engine, ticket_id)
    now = engine.clock.now()
    async with engine.db.begin() as conn:
        instance = await lock_instance(conn, instance_id)
        ticket = await _locked(conn, ticket_id)
        _require_pending(ticket)
        await close_ticket(
            conn,
            ticket_id,
            TicketStatus.RESOLVED,
            log_kind=LogKind.RELEASE,
            actor=actor,
            now=now,
            message=reason,
        )
        await interventions.record(
            conn,
            instance_id,
            interventions.COMPENSATION_RELEASE,
            actor=actor,
            reason=reason,
            changes=[_ticket_status(ticket, TicketStatus.RESOLVED)],
            now=now,
            trace_id=str(instance["trace_id"]),
            node_key=ticket["node_key"],
        )


async def terminate(
    engine: Engine, ticket_id: int, *, actor: str, reason: str | None = None
) -> None:
    """``action=terminate``: pending → terminated; a live instance is rejected."""
    instance_id = await _instance_of(engine, ticket_id)
    async with engine.db.begin() as conn, engine.step(conn, instance_id, actor) as step:
        ticket = await _locked(conn, ticket_id)
        _require_pending(ticket)
        before = str(step.instance["status"])
        detail: dict[str, Any] = {"instanceStatus": before}
        live = before in lifecycle.LIVE
        if live:
            skipped = [int(t.id) for t in await open_tasks(step)]
            detail.update(instanceStatus=InstanceStatus.REJECTED.value, skippedTasks=skipped)
        # this ticket first: ending the instance closes the other repair tickets
        await close_ticket(
            conn,
            ticket_id,
            TicketStatus.TERMINATED,
            log_kind=LogKind.TERMINATE,
            actor=actor,
            now=step.now,
            message=reason,
            detail=detail,
        )
        if live:
            why = f"[compensation ticket {ticket_id} terminated]" + (f" {reason}" if reason else "")
            await lifecycle.finish(
                step, InstanceStatus.REJECTED, reason=why, task_status=TaskStatus.SKIPPED
            )
        await step.trace(
            "compensation_terminated",
            node_key=ticket["failed_node_key"],
            detail={"ticketId": ticket_id, "reason": reason, "instanceStatusBefore": before},
        )
        await interventions.record_in_step(
            step,
            interventions.COMPENSATION_TERMINATE,
            reason=reason,
            node_key=ticket["failed_node_key"],
            changes=[
                _ticket_status(ticket, TicketStatus.TERMINATED),
                interventions.change("status", before, str(step.instance["status"])),
            ],
        )


async def add_note(
    engine: Engine,
    ticket_id: int,
    *,
    actor: str,
    message: str | None,
    attachment: Attachment | None = None,
    audit: AuditEntry | None = None,
) -> int:
    """A note or an attachment, on a ticket in any status; returns the history
    row id. ``audit``: the caller's entry, whose row commits with the note
    (with its ``logId``)."""
    now = engine.clock.now()
    async with change_transaction(engine.db, audit, engine.clock.now) as conn:
        await _locked(conn, ticket_id)
        await update_ticket(conn, ticket_id, now=now)
        if attachment is None:
            log_id = await add_log(
                conn, ticket_id, kind=LogKind.NOTE, actor=actor, now=now, message=message
            )
        else:
            log_id = await add_log(
                conn,
                ticket_id,
                kind=LogKind.ATTACHMENT,
                actor=actor,
                now=now,
                message=message,
                stored_name=attachment.stored_name,
                original_name=attachment.original_name,
                content_type=attachment.content_type,
                size_bytes=attachment.size_bytes,
            )
        if audit is not None:
            audit.detail["logId"] = log_id
        return log_id
