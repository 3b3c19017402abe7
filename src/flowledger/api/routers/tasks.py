"""Tasks (SPEC E-5, E-11, O-5): the human-task API — list my tasks, read
one, approve / reject / handle, transfer, comment — and the operator's
reassign. Acting on a task assigned to you needs ``workflow:task:act``;
acting on anyone else's, and reassigning, needs ``workflow:engine:operate``.
Listing other people's tasks needs ``workflow:instance:monitor``. Every
action is audited (A-2) and answers with the task as it is afterwards."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import Annotated, Any

from fastapi import APIRouter, Body, Path, Query

from flowledger.api import lookups
from flowledger.api.audit import AuditEntry, audited
from flowledger.api.auth import Caller, CurrentCaller
from flowledger.api.deps import ApiContext, Ctx
from flowledger.api.errors import Forbidden
from flowledger.api.pagination import Cursor, Limit, cursor_for, decode_cursor
from flowledger.api.permissions import (
    ENGINE_OPERATE,
    INSTANCE_MONITOR,
    TASK_ACT,
    require,
    require_own,
)
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import (
    MAX_ID,
    CommentCreate,
    CommentPublic,
    TaskDecision,
    TaskPage,
    TaskPublic,
    TaskReassign,
    TaskRejection,
    TaskTransfer,
)
from flowledger.engine import queries
from flowledger.ops.interventions.task_reassign import reassign_as
from flowledger.states import TaskStatus

router = APIRouter(prefix="/tasks", tags=["tasks"], route_class=GuardedRoute)

TaskId = Annotated[int, Path(alias="taskId", ge=1, le=MAX_ID)]
OptionalDecision = Annotated[TaskDecision, Body(default_factory=TaskDecision)]
OptionalRejection = Annotated[TaskRejection, Body(default_factory=TaskRejection)]
ME = "me"
ANYONE = "*"
# reading: monitors read any task; a caller who acts on tasks, its own
READ = allow(TASK_ACT, INSTANCE_MONITOR)


def _own_or_operate(name: str) -> Any:
    """The assignee's own action, or an operator's (audited when refused)."""
    return allow(TASK_ACT, ENGINE_OPERATE, audit=Audit(f"task.{name}", "task", "taskId"))


@router.get("", response_model=TaskPage, dependencies=[READ])
async def list_tasks(
    ctx: Ctx,
    caller: CurrentCaller,
    assignee: Annotated[
        str,
        Query(
            min_length=1,
            max_length=128,
            description="`me` (default), a user id, or `*` for everyone's.",
        ),
    ] = ME,
    status: TaskStatus | None = None,
    instance_id: Annotated[int | None, Query(alias="instanceId", ge=1, le=MAX_ID)] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> TaskPage:
    """Tasks newest first; by default the caller's own."""
    who = caller.user_id if assignee == ME else None if assignee == ANYONE else assignee
    if who != caller.user_id:
        require(caller, INSTANCE_MONITOR)
    after = decode_cursor(cursor, (datetime, int))
    async with ctx.db.read() as conn:
        page = await queries.list_tasks(
            conn,
            tenants=caller.tenant_scope,
            assignee=who,
            status=status,
            instance_id=instance_id,
            limit=limit,
            after=None if after is None else (after[0], after[1]),
        )
    return TaskPage(
        items=[TaskPublic.from_row(r, now=ctx.now()) for r in page.items],
        next=cursor_for(page.next_key),
    )


async def _task(ctx: ApiContext, caller: Caller, task_id: int) -> TaskPublic:
    return TaskPublic.from_row(await lookups.visible_task(ctx, caller, task_id), now=ctx.now())


@router.get("/{taskId}", response_model=TaskPublic, dependencies=[READ])
async def read_task(task_id: TaskId, ctx: Ctx, caller: CurrentCaller) -> TaskPublic:
    """One task: monitors read any; its assignee or the instance's initiator
    read it with ``workflow:task:act``."""
    task = await lookups.visible_task(ctx, caller, task_id)
    if not caller.has(INSTANCE_MONITOR) and caller.user_id not in (
        task["assignee"],
        task["initiator"],
    ):
        raise Forbidden(
            "reading other people's tasks needs " + INSTANCE_MONITOR, permission=INSTANCE_MONITOR
        )
    return TaskPublic.from_row(task, now=ctx.now())


async def _act(
    ctx: ApiContext,
    caller: Caller,
    task_id: int,
    name: str,
    reason: str | None,
    call: Callable[[dict[str, Any], AuditEntry], Awaitable[Any]],
) -> Any:
    """One audited task action by the assignee (or an operator; the route's
    declaration checked the permission)."""
    async with audited(ctx, caller, f"task.{name}", "task", task_id, reason=reason) as entry:
        task = await lookups.visible_task(ctx, caller, task_id)
        entry.tenant_id = task["tenant_id"]
        entry.detail["instanceId"] = task["instance_id"]
        require_own(caller, task["assignee"])
        result = await call(task, entry)
    return result


@router.post(
    "/{taskId}/approve", response_model=TaskPublic, dependencies=[_own_or_operate("approve")]
)
async def approve_task(
    task_id: TaskId, body: OptionalDecision, ctx: Ctx, caller: CurrentCaller
) -> TaskPublic:
    """Approve an approval task, optionally writing form fields."""

    async def call(_task: dict[str, Any], entry: AuditEntry) -> None:
        await ctx.engine.approve(
            task_id,
            actor=caller.user_id,
            comment=body.comment,
            form=body.form,
            as_operator=caller.has(ENGINE_OPERATE),
            audit=entry,
        )

    await _act(ctx, caller, task_id, "approve", body.comment, call)
    return await _task(ctx, caller, task_id)


@router.post(
    "/{taskId}/reject", response_model=TaskPublic, dependencies=[_own_or_operate("reject")]
)
async def reject_task(
    task_id: TaskId, body: OptionalRejection, ctx: Ctx, caller: CurrentCaller
) -> TaskPublic:
    """Reject an approval task: the instance ends ``rejected``."""

    async def call(_task: dict[str, Any], entry: AuditEntry) -> None:
        await ctx.engine.reject(
            task_id,
            actor=caller.user_id,
            comment=body.comment,
            as_operator=caller.has(ENGINE_OPERATE),
            audit=entry,
        )

    await _act(ctx, caller, task_id, "reject", body.comment, call)
    return await _task(ctx, caller, task_id)


@router.post(
    "/{taskId}/handle", response_model=TaskPublic, dependencies=[_own_or_operate("handle")]
)
async def handle_task(
    task_id: TaskId, body: OptionalDecision, ctx: Ctx, caller: CurrentCaller
) -> TaskPublic:
    """Complete a handle (办理), catch or resubmission task."""

    async def call(_task: dict[str, Any], entry: AuditEntry) -> None:
        await ctx.engine.handle(
            task_id,
            actor=caller.user_id,
            comment=body.comment,
            form=body.form,
            as_operator=caller.has(ENGINE_OPERATE),
            audit=entry,
        )

    await _act(ctx, caller, task_id, "handle", body.comment, call)
    return await _task(ctx, caller, task_id)


@router.post(
    "/{taskId}/transfer", response_model=TaskPublic, dependencies=[_own_or_operate("transfer")]
)
async def transfer_task(
    task_id: TaskId, body: TaskTransfer, ctx: Ctx, caller: CurrentCaller
) -> TaskPublic:
    """Hand a pending task to another user (the assignee, or an operator)."""

    async def call(_task: dict[str, Any], entry: AuditEntry) -> None:
        await ctx.engine.transfer(
            task_id,
            body.to,
            actor=caller.user_id,
            comment=body.comment,
            as_operator=caller.has(ENGINE_OPERATE),
            audit=entry,
        )

    await _act(ctx, caller, task_id, "transfer", body.comment, call)
    return await _task(ctx, caller, task_id)


@router.post(
    "/{taskId}/comment",
    status_code=201,
    response_model=CommentPublic,
    dependencies=[_own_or_operate("comment")],
)
async def comment_task(
    task_id: TaskId, body: CommentCreate, ctx: Ctx, caller: CurrentCaller
) -> CommentPublic:
    """Comment on a task (its assignee, or an operator)."""

    async def call(task: dict[str, Any], entry: AuditEntry) -> int:
        return await ctx.engine.comment(
            task["instance_id"], body.body, actor=caller.user_id, task_id=task_id, audit=entry
        )

    comment_id: int = await _act(ctx, caller, task_id, "comment", None, call)
    return CommentPublic.from_row(await lookups.comment(ctx, comment_id))


@router.post(
    "/{taskId}/reassign",
    response_model=TaskPublic,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("task.reassign", "task", "taskId"))],
)
async def reassign_task(
    task_id: TaskId, body: TaskReassign, ctx: Ctx, caller: CurrentCaller
) -> TaskPublic:
    """SPEC O-5: give a pending task to another user (operators only; a
    reason is required). 409 ``assignee_conflict`` when the target already
    holds a pending task at the same node of the instance."""
    await reassign_as(ctx, caller, ctx.engine, task_id, body.to, reason=body.reason)
    return await _task(ctx, caller, task_id)
