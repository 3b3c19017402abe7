"""Force jump as an operator's action (SPEC O-4, A-2, A-3): the instance
looked up within the caller's tenants (404 ``instance_not_found``
otherwise), then :meth:`flowledger.engine.Engine.force_jump` — one engine
transaction under the instance lock — audited ``instance.force_jump`` with
the reason, the target and what the jump terminated, consumed, canceled and
created. The row is written after the engine's commit
(:func:`flowledger.access.audit.audited`)."""

from __future__ import annotations

from flowledger.access.audit import AuditContext, audited
from flowledger.access.callers import Caller
from flowledger.engine import Engine, queries
from flowledger.engine.errors import InstanceNotFound
from flowledger.engine.force_jump import JumpOutcome


async def force_jump_as(
    ctx: AuditContext,
    caller: Caller,
    engine: Engine,
    instance_id: int,
    *,
    target: str,
    reason: str,
    from_node: str | None,
) -> JumpOutcome:
    """Move ``instance_id``'s execution to ``target`` (from ``from_node``
    when it has several positions), audited."""
    async with audited(
        ctx, caller, "instance.force_jump", "instance", instance_id, reason=reason
    ) as entry:
        async with ctx.db.read() as conn:
            instance = await queries.get_instance(conn, instance_id, tenants=caller.tenant_scope)
        if instance is None:
            raise InstanceNotFound(f"instance {instance_id} not found", field="instanceId")
        entry.tenant_id = instance["tenant_id"]
        entry.detail.update(target=target, fromNode=from_node)
        outcome = await engine.force_jump(
            instance_id, target=target, reason=reason, actor=caller.user_id, from_node=from_node
        )
        entry.detail.update(
            terminatedTasks=[t["taskId"] for t in outcome.terminated_tasks],
            consumedTokens=[t["tokenId"] for t in outcome.consumed_tokens],
            canceledJobs=[j["jobId"] for j in outcome.canceled_jobs],
            createdTasks=[t["taskId"] for t in outcome.created_tasks],
        )
    return outcome
