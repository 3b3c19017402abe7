"""Decisions that external systems call back with (SPEC X-1 async triggers,
X-2 external approvals), applied in one engine step each: the instance row
is locked first, then the recorded decision is looked up; the first decision
is recorded *and* applied in the same transaction.

Rules (the API maps the errors once):

- a subject that already has a recorded decision answers with that record
  and ``duplicate=True`` — a repeated or late callback never decides twice,
  whatever it says (this includes decisions made by a dispatch fallback);
- an unknown task, or a task that is not an external approval, is
  :class:`CallbackSubjectNotFound` (404); so is a job that is not a
  ``trigger_dispatch`` job; a sync trigger's job is :class:`TriggerNotAsync`;
- a task that ended without a recorded decision (instance canceled or
  withdrawn, task skipped by a force jump or handed to people by the
  ``manual`` fallback) is :class:`TaskNotPending` (409 ``task_not_pending``);
- an instance that is not running (suspended) refuses with
  ``instance_state`` (409): the caller may call back again after resume.

:func:`answer_external` and :func:`answer_trigger` are the API's entry
points: the step and its ``operation_audit`` row (``callback.external`` /
``callback.trigger``, actor ``external`` or ``external:<decidedBy>``) in one
transaction (:func:`flowledger.access.audit.audited_change`); a refused
callback's row is written on its own.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.access.audit import AuditContext, AuditEntry, audited_change
from flowledger.db.engine_schema import workflow_tasks
from flowledger.db.schema import workflow_jobs
from flowledger.engine import callback_records, lifecycle, outbound_nodes, trigger_results
from flowledger.engine.callback_records import CallbackRecord
from flowledger.engine.errors import TaskWithoutToken
from flowledger.engine.facade import Engine
from flowledger.engine.node_failures import NodeFailure
from flowledger.engine.step import Step
from flowledger.engine.tasks import lock_task
from flowledger.engine.tokens import Token, get_token
from flowledger.errors import ConflictError, NotFoundError
from flowledger.states import InstanceStatus, TaskStatus, TokenState

EXTERNAL_ACTOR = "external"


class CallbackSubjectNotFound(NotFoundError):
    code = "callback_subject_not_found"


class TaskNotPending(ConflictError):
    """The task ended without a recorded decision; nothing can decide it now."""

    code = "task_not_pending"


class TriggerNotAsync(ConflictError):
    code = "trigger_not_async"


@dataclass(frozen=True)
class CallbackAnswer:
    record: CallbackRecord
    duplicate: bool
    outcome: dict[str, Any]


async def _held(step: Step, task_id: int, status: TaskStatus) -> tuple[Any, Token]:
    task = await lock_task(step, task_id)
    if task is None or task.status != status:
        current = None if task is None else task.status
        raise TaskNotPending(
            f"task {task_id} is {current}; it can no longer be decided",
            field="taskId",
            status=current,
        )
    lifecycle.require_status(step, InstanceStatus.RUNNING)
    found = await get_token(step, task.token_id) if task.token_id is not None else None
    if found is None or found[1] != TokenState.ACTIVE or found[0].node_key != task.node_key:
        raise TaskWithoutToken(f"task {task_id} holds no active token", field="taskId")
    return task, found[0]


async def receive_external(
    step: Step, task_id: int, decision: str, *, comment: str | None, decided_by: str | None
) -> CallbackAnswer:
    """The external system decided ``decision`` (approve / reject) on the task."""
    recorded = await callback_records.find_record(step, callback_records.EXTERNAL, task_id)
    if recorded is not None:
        return CallbackAnswer(recorded, True, {})
    task, token = await _held(step, task_id, TaskStatus.PENDING)
    by = f"{EXTERNAL_ACTOR}:{decided_by}" if decided_by else EXTERNAL_ACTOR
    record = await callback_records.add_record(
        step,
        kind=callback_records.EXTERNAL,
        subject_id=task_id,
        task_id=task_id,
        outcome=decision,
        source="callback",
        decided_by=decided_by,
        comment=comment,
    )
    await outbound_nodes.decide_external(
        step, task, token, decision, comment=comment, by=by, source="callback"
    )
    return CallbackAnswer(record, False, {"instanceStatus": step.instance["status"]})


async def receive_trigger(
    step: Step,
    job_id: int,
    task_id: int,
    status: str,
    *,
    result: dict[str, Any] | None,
    error: str | None,
) -> CallbackAnswer:
    """An async trigger's external side finished with ``status``
    (succeeded / failed)."""
    recorded = await callback_records.find_record(step, callback_records.TRIGGER, job_id)
    if recorded is not None:
        return CallbackAnswer(recorded, True, {})
    task, token = await _held(step, task_id, TaskStatus.WAITING)
    record = await callback_records.add_record(
        step,
        kind=callback_records.TRIGGER,
        subject_id=job_id,
        task_id=task_id,
        outcome=status,
        source="callback",
        body={"result": result, "error": error},
    )
    if status == "succeeded":
        response = trigger_results.response_view(None, {}, result)
        outcome = await outbound_nodes.trigger_succeeded(
            step, task, token, job_id=job_id, response=response
        )
    else:
        message = error or "the external system reported a failure"
        failure = NodeFailure("trigger_callback_failed", message, job_id, retries_exhausted=False)
        await outbound_nodes.trigger_failed(step, task, token, failure)
        outcome = {"failed": failure.code, "error": message}
    return CallbackAnswer(record, False, outcome)


# ------------------------------------------------------------ entry points


async def external_decision(
    engine: Engine,
    task_id: int,
    decision: str,
    *,
    comment: str | None = None,
    decided_by: str | None = None,
) -> CallbackAnswer:
    """Apply an external approval callback in its own transaction."""
    async with engine.db.begin() as conn:
        return await apply_external(
            conn, engine, task_id, decision, comment=comment, decided_by=decided_by
        )


async def apply_external(
    conn: AsyncConnection,
    engine: Engine,
    task_id: int,
    decision: str,
    *,
    comment: str | None = None,
    decided_by: str | None = None,
) -> CallbackAnswer:
    """Apply an external approval callback in the caller's transaction."""
    task = (
        await conn.execute(
            select(workflow_tasks.c.instance_id, workflow_tasks.c.kind).where(
                workflow_tasks.c.id == task_id
            )
        )
    ).first()
    if task is None or task.kind != "external_approval":
        raise CallbackSubjectNotFound(f"external approval task {task_id} not found", field="taskId")
    async with engine.step(conn, int(task.instance_id), EXTERNAL_ACTOR) as step:
        return await receive_external(
            step, task_id, decision, comment=comment, decided_by=decided_by
        )


async def trigger_result(
    engine: Engine,
    job_id: int,
    status: str,
    *,
    result: dict[str, Any] | None = None,
    error: str | None = None,
) -> CallbackAnswer:
    """Apply an async trigger callback in its own transaction."""
    async with engine.db.begin() as conn:
        return await apply_trigger(conn, engine, job_id, status, result=result, error=error)


async def apply_trigger(
    conn: AsyncConnection,
    engine: Engine,
    job_id: int,
    status: str,
    *,
    result: dict[str, Any] | None = None,
    error: str | None = None,
) -> CallbackAnswer:
    """Apply an async trigger callback in the caller's transaction."""
    job = (
        await conn.execute(
            select(
                workflow_jobs.c.type,
                workflow_jobs.c.instance_id,
                workflow_jobs.c.task_id,
                workflow_jobs.c.payload,
            ).where(workflow_jobs.c.id == job_id)
        )
    ).first()
    if (
        job is None
        or job.type != "trigger_dispatch"
        or job.instance_id is None
        or job.task_id is None
    ):
        raise CallbackSubjectNotFound(f"trigger job {job_id} not found", field="jobId")
    mode = (job.payload.get("request") or {}).get("mode")
    if mode != "async":
        raise TriggerNotAsync(
            f"trigger job {job_id} is a {mode} call; only async triggers take callbacks",
            field="jobId",
        )
    async with engine.step(conn, int(job.instance_id), EXTERNAL_ACTOR) as step:
        return await receive_trigger(
            step, job_id, int(job.task_id), status, result=result, error=error
        )


# --------------------------------------------------------- audited (the API)


async def answer_external(
    ctx: AuditContext,
    engine: Engine,
    task_id: int,
    decision: str,
    *,
    comment: str | None = None,
    decided_by: str | None = None,
) -> CallbackAnswer:
    """:func:`apply_external` with its audit row, in one transaction."""
    actor = f"{EXTERNAL_ACTOR}:{decided_by}" if decided_by else EXTERNAL_ACTOR
    entry = AuditEntry(actor, "callback.external", "task", str(task_id))
    async with audited_change(ctx, entry) as conn:
        answer = await apply_external(
            conn, engine, task_id, decision, comment=comment, decided_by=decided_by
        )
        entry.tenant_id = answer.record.tenant_id
        entry.detail.update(
            decision=answer.record.outcome, asked=decision, duplicate=answer.duplicate
        )
    return answer


async def answer_trigger(
    ctx: AuditContext,
    engine: Engine,
    job_id: int,
    status: str,
    *,
    result: dict[str, Any] | None = None,
    error: str | None = None,
) -> CallbackAnswer:
    """:func:`apply_trigger` with its audit row, in one transaction."""
    entry = AuditEntry(EXTERNAL_ACTOR, "callback.trigger", "job", str(job_id))
    async with audited_change(ctx, entry) as conn:
        answer = await apply_trigger(conn, engine, job_id, status, result=result, error=error)
        entry.tenant_id = answer.record.tenant_id
        entry.detail.update(status=answer.record.outcome, asked=status, duplicate=answer.duplicate)
    return answer
