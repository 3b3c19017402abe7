"""Remind (催办, SPEC O-5): ``POST /api/workflows/tasks/{taskId}/remind``
notifies the assignee of a pending task — in-app message, plus email when
SMTP is configured and the assignee is an address — at most once per task
per ten minutes. Needs ``workflow:engine:operate`` (checked before the body
is read); audited (a refusal too), the ``note`` as the audit row's reason.

Too soon: 429 ``remind_too_soon`` with ``retryAfterSeconds`` in the body and
the same number in the ``Retry-After`` header. A task that is not pending:
409 ``task_state``. The rule and the audit live in
:mod:`flowledger.ops.interventions.task_reminders`.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Body, Path
from fastapi.responses import JSONResponse

from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.errors import error_body
from flowledger.api.monitor_schemas import RemindBody, ReminderPublic
from flowledger.api.permissions import ENGINE_OPERATE
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import MAX_ID, ErrorPublic
from flowledger.ops.interventions.task_reminders import RemindTooSoon, remind_as

router = APIRouter(prefix="/tasks", tags=["tasks"], route_class=GuardedRoute)

TaskId = Annotated[int, Path(alias="taskId", ge=1, le=MAX_ID)]
OptionalRemind = Annotated[RemindBody, Body(default_factory=RemindBody)]


def _too_soon(exc: RemindTooSoon) -> JSONResponse:
    seconds = int(exc.details["retryAfterSeconds"])
    return JSONResponse(
        error_body(exc.code, exc.message, exc.field, **exc.details),
        status_code=429,
        headers={"Retry-After": str(seconds)},
    )


@router.post(
    "/{taskId}/remind",
    response_model=ReminderPublic,
    responses={429: {"model": ErrorPublic, "description": "Reminded less than 10 minutes ago"}},
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("task.remind", "task", "taskId"))],
)
async def remind_task(
    task_id: TaskId, caller: CurrentCaller, body: OptionalRemind, ctx: Ctx
) -> ReminderPublic | JSONResponse:
    """Remind the assignee of a pending task (催办); ``note`` is added to the message."""
    try:
        reminder = await remind_as(ctx, caller, task_id, settings=ctx.settings, note=body.note)
    except RemindTooSoon as exc:
        return _too_soon(exc)
    return ReminderPublic.model_validate(reminder.public())
