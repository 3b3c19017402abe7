"""Recreating a lost job of a waiting node (targeted recovery, SPEC O-18):
the engine side of "missing jobs recreated". Each function runs inside an
open step (instance row locked first, L-13), re-checks that the task still
waits as the node's job expects, and enqueues the job exactly as entering the
node would have — same type, payload, idempotency key and budget — with a
``job_recreated`` engine trace row (E-8). It returns the new job's id, or a
short reason when there is nothing to recreate (the caller reports it as
skipped).

- ``delay_wake``: due at the task's ``due_at`` (or ``run_at`` when that is
  later: a recovery staggers its jobs), no idempotency key, as
  :func:`~flowledger.engine.nodes.waits.enter_delay` enqueues it.
- ``task_timeout``: due at the task's ``due_at`` (or later).
- ``subprocess_spawn``: key ``spawn:<taskId>``.
- ``subprocess_join``: for a child that already ended, key
  ``join:<childId>``, on the parent, as :func:`lifecycle.finish` enqueues it.
- ``trigger_dispatch`` / ``external_dispatch``: the call rendered *now* from
  the form (the original rendering was never stored), keys
  ``trigger:<taskId>`` / ``external:<taskId>``, the node's budget. A call that
  can no longer be rendered (the SSRF guard refuses its URL) is not
  recreated: the reason says so.

An idempotency key that already names a job means the job is not missing
(``enqueue`` returns the existing one): reported as a reason, not a new id.
Never imports ``ops`` or ``api``."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flowledger.engine.async_steps import held_task
from flowledger.engine.job_types import engine_job_type
from flowledger.engine.outbound_requests import (
    HeaderInvalid,
    render_call,
    render_dispatch,
    template_values,
    trigger_max_attempts,
)
from flowledger.engine.step import Step
from flowledger.ledger.models import JobSpec
from flowledger.outbound.ssrf import OutboundRefused
from flowledger.states import TaskStatus

# the task status each recreatable job type needs, and the task kind it serves
EXPECTED: dict[str, tuple[TaskStatus, str | None]] = {
    "delay_wake": (TaskStatus.WAITING, "delay"),
    "task_timeout": (TaskStatus.PENDING, None),
    "subprocess_spawn": (TaskStatus.WAITING, "subprocess"),
    "subprocess_join": (TaskStatus.WAITING, "subprocess"),
    "trigger_dispatch": (TaskStatus.WAITING, "trigger"),
    "external_dispatch": (TaskStatus.PENDING, "external_approval"),
}


async def _enqueue(
    step: Step,
    job_type: str,
    task: Any,
    *,
    payload: dict[str, Any],
    run_at: datetime,
    idempotency_key: str | None = None,
    max_attempts: int | None = None,
) -> int | str:
    result = await step.insert_job_now(
        JobSpec(
            type=engine_job_type(job_type),
            payload=payload,
            run_at=run_at,
            max_attempts=max_attempts,
            idempotency_key=idempotency_key,
            trace_id=step.trace_id,
            tenant_id=step.instance["tenant_id"],
            instance_id=step.instance_id,
            task_id=task.id,
            node_key=task.node_key,
        ),
    )
    if not result.created:
        return f"job {result.job_id} already holds the key {idempotency_key}"
    await step.trace(
        "job_recreated",
        node_key=task.node_key,
        task_id=task.id,
        job_id=result.job_id,
        detail={"type": job_type, "by": step.actor},
    )
    return result.job_id


async def waiting_task(step: Step, job_type: str, task_id: int) -> Any | str:
    """The task (locked) when it still waits for a ``job_type`` job on a
    running instance and holds an active token; else why not."""
    status, kind = EXPECTED[job_type]
    found = await held_task(step, task_id, status)
    if isinstance(found, str):
        return found
    task, _token = found
    if kind is not None and task.kind != kind:
        return f"task {task_id} is a {task.kind} task, not {kind}"
    return task


async def recreate_job(
    step: Step,
    job_type: str,
    task_id: int,
    *,
    run_at: datetime,
    child_instance_id: int | None = None,
) -> int | str:
    """Recreate the ``job_type`` job of task ``task_id``; see the module doc."""
    task = await waiting_task(step, job_type, task_id)
    if isinstance(task, str):
        return task
    payload: dict[str, Any] = {"taskId": task_id}
    if job_type in ("delay_wake", "task_timeout"):
        if task.due_at is None:
            return f"task {task_id} has no due time"
        return await _enqueue(
            step, job_type, task, payload=payload, run_at=max(task.due_at, run_at)
        )
    if job_type == "subprocess_spawn":
        key = f"spawn:{task_id}"
        return await _enqueue(
            step, job_type, task, payload=payload, run_at=run_at, idempotency_key=key
        )
    if job_type == "subprocess_join":
        assert child_instance_id is not None
        payload = {
            "childInstanceId": child_instance_id,
            "parentInstanceId": step.instance_id,
            "taskId": task_id,
        }
        key = f"join:{child_instance_id}"
        return await _enqueue(
            step, job_type, task, payload=payload, run_at=run_at, idempotency_key=key
        )
    node = step.defn.node(task.node_key)
    try:
        if job_type == "trigger_dispatch":
            assert node.call is not None
            request = render_call(node.call, template_values(step, node, task_id))
            max_attempts: int | None = trigger_max_attempts(node)
            key = f"trigger:{task_id}"
        else:
            request = render_dispatch(step, node, task_id)
            max_attempts = None if node.max_retries is None else node.max_retries + 1
            key = f"external:{task_id}"
    except (OutboundRefused, HeaderInvalid) as exc:
        return f"the call cannot be rendered: {exc}"
    return await _enqueue(
        step,
        job_type,
        task,
        payload={"taskId": task_id, "request": request},
        run_at=run_at,
        idempotency_key=key,
        max_attempts=max_attempts,
    )
