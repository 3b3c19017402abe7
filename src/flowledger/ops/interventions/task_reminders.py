"""Remind (催办, SPEC O-5, X-7): an operator nudges the assignee of a
pending task — an in-app message always, an email too when SMTP is
configured and the assignee is an email address — at most once per task
per :data:`REMIND_INTERVAL`.

The limit is one conditional upsert on ``workflow_task_reminders`` (keyed by
the task): it inserts the first reminder, or moves ``last_reminded_at``
only when the previous one is at least ten minutes old. Two operators
clicking at once: the database serializes the two upserts on the row, the
second sees the first's time and is refused (:class:`RemindTooSoon`, 429
with the seconds left). The message and the instance's intervention (issue
31: ``reminders`` n-1 → n, the note as the reason) are written in the same
transaction, so a refused reminder writes neither. Email leaves the process and so is sent
after the commit; its outcome is reported, never retried silently.

:func:`remind_as` is the operator's action (the API's): the task looked
up within the caller's tenants, the reminder audited ``task.remind``.

SMTP counts as configured when ``FLOWLEDGER_SMTP_HOST`` is set (the
process settings' explicitly set fields)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select

from flowledger.access.audit import AuditContext, audited
from flowledger.access.callers import Caller
from flowledger.db.database import Database
from flowledger.db.dialects import upsert
from flowledger.db.monitor_schema import workflow_task_reminders as r
from flowledger.engine import interventions, queries
from flowledger.engine.errors import TaskNotFound, TaskStateError
from flowledger.errors import FlowledgerError
from flowledger.notify.email import send_email
from flowledger.notify.messages import post_message
from flowledger.settings import Settings
from flowledger.states import TaskStatus

REMIND_INTERVAL = timedelta(minutes=10)
MESSAGE_KIND = "task_reminder"


class RemindTooSoon(FlowledgerError):
    """The task was reminded less than ten minutes ago (429;
    ``retryAfterSeconds`` says how long to wait)."""

    code = "remind_too_soon"


@dataclass(frozen=True)
class Reminder:
    task_id: int
    assignee: str
    message_id: int
    reminded_at: datetime
    next_allowed_at: datetime
    email: str  # sent | not_configured | no_address | failed

    def public(self) -> dict[str, Any]:
        return {
            "taskId": self.task_id,
            "assignee": self.assignee,
            "messageId": self.message_id,
            "remindedAt": self.reminded_at,
            "nextAllowedAt": self.next_allowed_at,
            "email": self.email,
        }


def smtp_configured(settings: Settings) -> bool:
    return "smtp_host" in settings.model_fields_set


async def _claim(
    db: Database, conn: Any, task: dict[str, Any], actor: str, now: datetime
) -> int | None:
    """The task's reminder count after this one, None when it is too soon."""
    stmt = upsert(conn, r).values(
        task_id=task["id"],
        tenant_id=task["tenant_id"],
        last_reminded_by=actor,
        last_reminded_at=now,
        reminders=1,
    )
    conditional = stmt.on_conflict_do_update(
        index_elements=[r.c.task_id],
        set_={
            "last_reminded_by": stmt.excluded.last_reminded_by,
            "last_reminded_at": stmt.excluded.last_reminded_at,
            "reminders": r.c.reminders + 1,
        },
        where=r.c.last_reminded_at <= now - REMIND_INTERVAL,
    ).returning(r.c.reminders)
    count = (await conn.execute(conditional)).scalar_one_or_none()
    return None if count is None else int(count)


async def remind(
    db: Database,
    task: dict[str, Any],
    *,
    actor: str,
    now: datetime,
    settings: Settings,
    note: str | None = None,
) -> Reminder:
    """Remind the assignee of ``task`` (a row of ``engine.queries.get_task``)."""
    if task["status"] != TaskStatus.PENDING:
        raise TaskStateError(
            f"task {task['id']} is {task['status']}; only a pending task can be reminded",
            field="status",
            status=task["status"],
        )
    label = f"{task['definition_key']} #{task['instance_id']}"
    body = f"{actor} asks you to act on your task at {task['node_key']} in {label}."
    if note:
        body += f"\n\n{note}"
    async with db.begin() as conn:
        count = await _claim(db, conn, task, actor, now)
        if count is None:
            last = (
                await conn.execute(select(r.c.last_reminded_at).where(r.c.task_id == task["id"]))
            ).scalar_one()
            left = max(1, math.ceil((last + REMIND_INTERVAL - now).total_seconds()))
            raise RemindTooSoon(
                f"task {task['id']} was reminded at {last.isoformat()}; "
                f"the next reminder is possible in {left} s",
                retryAfterSeconds=left,
                lastRemindedAt=last,
            )
        message_id = await post_message(
            conn,
            tenant=task["tenant_id"],
            recipient=task["assignee"],
            title=f"Reminder: {task['node_key']} in {label}",
            body=body,
            kind=MESSAGE_KIND,
            link=f"/tasks/{task['id']}",
            now=now,
        )
        await interventions.record(
            conn,
            int(task["instance_id"]),
            interventions.REMIND,
            actor=actor,
            reason=note,
            changes=[interventions.change("reminders", count - 1, count)],
            now=now,
            node_key=task["node_key"],
            task_id=int(task["id"]),
        )
    email = await _email(settings, task["assignee"], f"Reminder: {label}", body)
    return Reminder(
        task_id=task["id"],
        assignee=task["assignee"],
        message_id=message_id,
        reminded_at=now,
        next_allowed_at=now + REMIND_INTERVAL,
        email=email,
    )


async def _email(settings: Settings, assignee: str, subject: str, body: str) -> str:
    if not smtp_configured(settings):
        return "not_configured"
    if "@" not in assignee:
        return "no_address"
    try:
        await send_email(settings, to=[assignee], subject=subject, body=body)
    except FlowledgerError:
        return "failed"
    return "sent"


async def remind_as(
    ctx: AuditContext, caller: Caller, task_id: int, *, settings: Settings, note: str | None
) -> Reminder:
    """:func:`remind` of a task ``caller`` sees (404 ``task_not_found``
    otherwise), audited ``task.remind`` with the note as its reason. The row
    is written once the reminder committed and its e-mail was tried, so it
    records the e-mail's outcome too (:func:`flowledger.access.audit.audited`)."""
    async with audited(ctx, caller, "task.remind", "task", task_id, reason=note) as entry:
        async with ctx.db.read() as conn:
            task = await queries.get_task(conn, task_id, tenants=caller.tenant_scope)
        if task is None:
            raise TaskNotFound(f"task {task_id} not found", field="taskId")
        entry.tenant_id = task["tenant_id"]
        entry.detail.update(instanceId=task["instance_id"], assignee=task["assignee"])
        reminder = await remind(
            ctx.db, task, actor=caller.user_id, now=ctx.now(), settings=settings, note=note
        )
        entry.detail.update(messageId=reminder.message_id, email=reminder.email)
    return reminder
