"""Instance lifecycle (SPEC E-6, L-18, L-22): finishing in a terminal state
(approved, rejected, withdrawn, canceled), return to initiator, suspend and
resume — each with the ledger's cleanup or pause/resume in the same
transaction, and a parent's ``subprocess_join`` job when a child ends."""

from __future__ import annotations

from flowledger.engine import interventions
from flowledger.engine.errors import InstanceStateError
from flowledger.engine.job_types import CLEANUP_TYPES, PAUSABLE_TYPES
from flowledger.engine.step import Step
from flowledger.engine.store.instance_end import InstanceEnd
from flowledger.engine.tasks import close_tasks, create_task, open_tasks
from flowledger.engine.tokens import (
    consume_all_tokens,
    create_token,
    take_buffered_move,
)
from flowledger.engine.write_buffer import flush_jobs
from flowledger.states import InstanceStatus, JobStatus, TaskStatus

LIVE = (InstanceStatus.RUNNING, InstanceStatus.SUSPENDED)


def require_status(step: Step, *allowed: InstanceStatus) -> None:
    status = step.instance["status"]
    if status not in allowed:
        raise InstanceStateError(
            f"instance {step.instance_id} is {status}; this needs "
            + " or ".join(s.value for s in allowed),
            field="status",
            status=status,
        )


async def finish(
    step: Step,
    status: InstanceStatus,
    *,
    reason: str | None = None,
    task_status: TaskStatus = TaskStatus.CANCELED,
    tokens_left: bool = True,
) -> None:
    """End the instance: set its status (reading its open tasks and live
    advancement jobs in the same round trip on PostgreSQL), close those
    tasks, consume tokens (``tokens_left`` false: the caller just counted
    none), cancel those jobs (L-22), emit the event, and wake a waiting
    parent."""
    await flush_jobs(step.conn)  # the ending's read, and the cleanup, see this step's jobs too
    ended = await step.end_instance(status, job_types=CLEANUP_TYPES)
    await _ended(
        step, status, ended, reason=reason, task_status=task_status, tokens_left=tokens_left
    )


async def finish_with_last_token(step: Step, token_id: int) -> None:
    """A token reached an end: consume it and, when it was the last live
    one (every path reached an end, E-4), approve the instance as
    :func:`finish` does — one round trip on PostgreSQL."""
    await flush_jobs(step.conn)  # as in finish
    at_node = take_buffered_move(step, token_id)  # the token's move, in the same statement
    ended = await step.end_with_last_token(
        InstanceStatus.APPROVED, token_id, at_node=at_node, job_types=CLEANUP_TYPES
    )
    if ended is not None:
        await _ended(
            step,
            InstanceStatus.APPROVED,
            ended,
            reason=None,
            task_status=TaskStatus.CANCELED,
            tokens_left=False,
        )


async def _ended(
    step: Step,
    status: InstanceStatus,
    ended: InstanceEnd,
    *,
    reason: str | None,
    task_status: TaskStatus,
    tokens_left: bool,
) -> None:
    """What follows the instance row's ending: see :func:`finish`."""
    await close_tasks(step, ended.open_task_ids, status=task_status, comment=reason)
    if tokens_left:
        await consume_all_tokens(step)
    canceled: list[int] = []
    if ended.live_job_ids:  # the cleanup locks them (and any committed since) and cancels
        canceled = await step.store.ledger.jobs_cancel_for_instance(
            step.conn,
            step.instance_id,
            types=CLEANUP_TYPES,
            now=step.now,
            reason=f"instance {status.value}",
            keep_job_id=step.job_id,
        )
    step.finished = True
    if step.hooks.instance_ended is not None and ended.also:
        await flush_jobs(step.conn)  # a hook may read or enqueue jobs
        await step.hooks.instance_ended(step, status)
    await step.trace(
        "instance_finished",
        detail={"status": status.value, "reason": reason, "canceledJobs": canceled},
    )
    await step.emit("instance.finished", {"status": status.value})
    parent = step.instance.get("parent_instance_id")
    if parent is not None:
        await step.enqueue(
            "subprocess_join",
            payload={
                "childInstanceId": step.instance_id,
                "parentInstanceId": parent,
                "taskId": step.instance["parent_task_id"],
            },
            idempotency_key=f"join:{step.instance_id}",
            instance_id=int(parent),
            task_id=step.instance["parent_task_id"],
        )


async def return_to_initiator(step: Step, reason: str | None) -> int:
    """退回发起人: everything in flight stops; the initiator gets a resubmission
    task holding a token at the start node. Returns the new task id."""
    require_status(step, InstanceStatus.RUNNING)
    open_now = await open_tasks(step)
    waiting = [row for row in open_now if row.kind == "resubmit"]
    if waiting:  # returned already (two operators at once, or a repeat): nothing to return
        raise InstanceStateError(
            f"instance {step.instance_id} is already returned to its initiator: "
            f"resubmission task {waiting[0].id} is pending",
            field="status",
            status=step.instance["status"],
        )
    await close_tasks(
        step, [int(row.id) for row in open_now], status=TaskStatus.CANCELED, comment=reason
    )
    await consume_all_tokens(step)
    await flush_jobs(step.conn)
    await step.store.ledger.jobs_cancel_for_instance(
        step.conn,
        step.instance_id,
        types=CLEANUP_TYPES,
        now=step.now,
        reason="returned to initiator",
    )
    start = step.defn.start_node()
    token = await create_token(step, start.key, [])
    task_id = await create_task(
        step,
        node_key=start.key,
        token_id=token.id,
        kind="resubmit",
        status=TaskStatus.PENDING,
        assignee=step.instance["initiator"],
    )
    await step.trace("instance_returned", detail={"reason": reason, "taskId": task_id})
    await step.emit("instance.returned", {"reason": reason})
    return task_id


async def suspend(step: Step, reason: str | None) -> list[int]:
    require_status(step, InstanceStatus.RUNNING)
    await flush_jobs(step.conn)
    paused = await step.store.ledger.jobs_pause(
        step.conn, step.instance_id, types=PAUSABLE_TYPES, now=step.now
    )
    await step.set_instance(status=InstanceStatus.SUSPENDED)
    await step.trace("instance_suspended", detail={"reason": reason, "pausedJobs": paused})
    await interventions.record_in_step(
        step,
        interventions.SUSPEND,
        reason=reason,
        changes=[
            interventions.change(
                "status", InstanceStatus.RUNNING.value, InstanceStatus.SUSPENDED.value
            ),
            # a job is paused from pending or running: the ids, not a status before
            interventions.change("pausedJobs", [], paused),
        ],
    )
    await step.emit("instance.suspended", {"reason": reason})
    return paused


async def resume(step: Step, reason: str | None = None) -> list[int]:
    require_status(step, InstanceStatus.SUSPENDED)
    await flush_jobs(step.conn)
    resumed = await step.store.ledger.jobs_resume(
        step.conn, step.instance_id, types=PAUSABLE_TYPES, now=step.now
    )
    await step.set_instance(status=InstanceStatus.RUNNING)
    await step.trace("instance_resumed", detail={"resumedJobs": resumed})
    await interventions.record_in_step(
        step,
        interventions.RESUME,
        reason=reason,
        changes=[
            interventions.change(
                "status", InstanceStatus.SUSPENDED.value, InstanceStatus.RUNNING.value
            ),
            *(
                interventions.change(
                    f"job.{j}.status", JobStatus.PAUSED.value, JobStatus.PENDING.value
                )
                for j in resumed
            ),
        ],
    )
    await step.emit("instance.resumed", {})
    return resumed


async def terminate(step: Step, status: InstanceStatus, reason: str | None) -> None:
    """Withdraw or cancel a live instance."""
    require_status(step, *LIVE)
    await finish(step, status, reason=reason)
