"""Loading the objects a request is about, within the caller's tenants
(SPEC A-3): an object in a tenant the caller cannot see is reported exactly
like one that does not exist (404), so existence never leaks. Reads only;
each lookup is its own short read transaction (never held across an engine
call: on SQLite a writer inside an open transaction would wait on itself)."""

from __future__ import annotations

from typing import Any

from flowledger.api.auth import Caller
from flowledger.api.deps import ApiContext
from flowledger.engine import queries
from flowledger.engine.errors import InstanceNotFound, TaskNotFound
from flowledger.errors import NotFoundError


async def visible_instance(ctx: ApiContext, caller: Caller, instance_id: int) -> dict[str, Any]:
    async with ctx.db.read() as conn:
        row = await queries.get_instance(conn, instance_id, tenants=caller.tenant_scope)
    if row is None:
        raise InstanceNotFound(f"instance {instance_id} not found", field="instanceId")
    return row


async def instance_detail(ctx: ApiContext, caller: Caller, instance_id: int) -> dict[str, Any]:
    async with ctx.db.read() as conn:
        row = await queries.instance_detail(conn, instance_id, tenants=caller.tenant_scope)
    if row is None:
        raise InstanceNotFound(f"instance {instance_id} not found", field="instanceId")
    return row


async def is_participant(ctx: ApiContext, instance_id: int, user: str) -> bool:
    async with ctx.db.read() as conn:
        return await queries.has_task_for(conn, instance_id, user)


async def visible_task(ctx: ApiContext, caller: Caller, task_id: int) -> dict[str, Any]:
    async with ctx.db.read() as conn:
        row = await queries.get_task(conn, task_id, tenants=caller.tenant_scope)
    if row is None:
        raise TaskNotFound(f"task {task_id} not found", field="taskId")
    return row


async def visible_schedule(ctx: ApiContext, caller: Caller, schedule_id: int) -> dict[str, Any]:
    async with ctx.db.read() as conn:
        row = await queries.get_schedule(conn, schedule_id, tenants=caller.tenant_scope)
    if row is None:
        raise NotFoundError(f"schedule {schedule_id} not found", field="scheduleId")
    return row


async def comment(ctx: ApiContext, comment_id: int) -> dict[str, Any]:
    async with ctx.db.read() as conn:
        row = await queries.get_comment(conn, comment_id)
    if row is None:  # pragma: no cover - read right after the insert committed
        raise NotFoundError(f"comment {comment_id} not found", field="commentId")
    return row
