"""A compensation ticket's actions as an operator asks for them (SPEC C-8,
A-2, A-3): the ticket looked up within the caller's tenants (404
``compensation_not_found`` otherwise), then the action of
:mod:`flowledger.compensation.operations`, audited
``compensation.resume|retry|resolve|terminate`` (target the ticket, the
instance in the detail). Each action commits in the engine's transaction,
so its row is written after (:func:`flowledger.access.audit.audited`)."""

from __future__ import annotations

from typing import Any, Literal

from flowledger.access.audit import AuditContext, audited
from flowledger.access.callers import Caller
from flowledger.compensation import operations, queries
from flowledger.compensation.errors import TicketNotFound
from flowledger.engine import Engine


async def visible_ticket(ctx: AuditContext, caller: Caller, ticket_id: int) -> dict[str, Any]:
    """The ticket if the caller sees its tenant (404 otherwise)."""
    async with ctx.db.read() as conn:
        row = await queries.get_ticket(conn, ticket_id, tenants=caller.tenant_scope)
    if row is None:
        raise TicketNotFound(f"compensation ticket {ticket_id} not found", field="ticketId")
    return row


async def resume_as(
    ctx: AuditContext, caller: Caller, engine: Engine, ticket_id: int, *, reason: str | None
) -> None:
    """Finish the repair task, continue past the failed node, resolve."""
    async with audited(
        ctx, caller, "compensation.resume", "compensation", ticket_id, reason=reason
    ) as entry:
        ticket = await visible_ticket(ctx, caller, ticket_id)
        entry.tenant_id = ticket["tenant_id"]
        entry.detail.update(instanceId=ticket["instance_id"], nodeKey=ticket["failed_node_key"])
        await operations.resume(engine, ticket_id, actor=caller.user_id, reason=reason)


async def retry_as(
    ctx: AuditContext, caller: Caller, engine: Engine, ticket_id: int, *, reason: str | None
) -> int:
    """Enqueue a new compensation job for a failed action; its id."""
    async with audited(
        ctx, caller, "compensation.retry", "compensation", ticket_id, reason=reason
    ) as entry:
        ticket = await visible_ticket(ctx, caller, ticket_id)
        entry.tenant_id = ticket["tenant_id"]
        entry.detail.update(instanceId=ticket["instance_id"], previousJobId=ticket["action_job_id"])
        job_id = await operations.retry(engine, ticket_id, actor=caller.user_id, reason=reason)
        entry.detail["jobId"] = job_id
    return job_id


async def close_as(
    ctx: AuditContext,
    caller: Caller,
    engine: Engine,
    ticket_id: int,
    action: Literal["resolve", "terminate"],
    *,
    reason: str | None,
) -> None:
    """``resolve``: the ticket only; ``terminate``: the instance is rejected too."""
    async with audited(
        ctx, caller, f"compensation.{action}", "compensation", ticket_id, reason=reason
    ) as entry:
        ticket = await visible_ticket(ctx, caller, ticket_id)
        entry.tenant_id = ticket["tenant_id"]
        entry.detail["instanceId"] = ticket["instance_id"]
        if action == "resolve":
            await operations.release(engine, ticket_id, actor=caller.user_id, reason=reason)
        else:
            await operations.terminate(engine, ticket_id, actor=caller.user_id, reason=reason)
