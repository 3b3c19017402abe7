"""The engine side of its ledger jobs: what ``delay_wake``, ``task_timeout``,
``subprocess_spawn``, ``subprocess_join`` and ``schedule_launch`` do once
their handler holds the job (the handlers in :mod:`flowledger.handlers` wrap
each call in a fenced step receipt, instance row locked first).

A subprocess whose child did not end approved is a node failure handed to
:func:`~flowledger.engine.node_failures.node_failed` (its failurePolicy, C-1).

Every function re-checks the state it acts on — instance running, task still
waiting or pending, token still active — and returns a short reason when
there is nothing to do (the handler reports that as ``skipped``)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select

from flowledger.db.engine_schema import workflow_instances
from flowledger.definitions.expressions import evaluate_value
from flowledger.engine import actions, escalation, runner, task_notices
from flowledger.engine.forms import write_form
from flowledger.engine.instances import start_instance
from flowledger.engine.moves import leave
from flowledger.engine.node_failures import NodeFailure, node_failed
from flowledger.engine.snapshots import SnapshotCache
from flowledger.engine.step import JobStepLock, Step
from flowledger.engine.store.job_lock import TaskFinish
from flowledger.engine.store.protocol import EngineStore
from flowledger.engine.tasks import (
    SYSTEM,
    finish_held_task,
    finish_task,
    lock_task_with_token,
    took_held_task,
)
from flowledger.engine.tokens import Token
from flowledger.states import InstanceStatus, TaskStatus, TokenState

_WAKE_ACTION = "handle"


async def held_task(step: Step, task_id: int, status: TaskStatus) -> tuple[Any, Token] | str:
    """The task (locked) and the active token it holds, when the instance is
    running and the task is still ``status``; else why there is nothing to do."""
    if step.instance["status"] != InstanceStatus.RUNNING:
        return f"instance is {step.instance['status']}"
    task, token, state = await lock_task_with_token(step, task_id)
    if task is None or task.status != status:
        return f"task {task_id} is no longer {status.value}"
    if token is None or state != TokenState.ACTIVE:
        return f"task {task_id} holds no active token"
    return task, token


def wake_lock(store: EngineStore, instance_id: int, task_id: int, *, now: datetime) -> JobStepLock:
    """The first statement of a ``delay_wake`` job's step: the instance row,
    and the delay's task finished right after it (in the same statement on
    PostgreSQL) when it is still waiting with an active token and the
    instance is running."""
    finish = TaskFinish(
        task_id,
        expected=TaskStatus.WAITING,
        status=TaskStatus.COMPLETED,
        action=_WAKE_ACTION,
        by=SYSTEM,
        now=now,
    )
    return JobStepLock(store, instance_id, finish=finish)


async def wake_delay(step: Step, task_id: int, lock: JobStepLock | None = None) -> str | None:
    """Finish the delay's task and move its token on; ``lock``: the step's
    :func:`wake_lock`, which has already tried the finish (else it is
    written here)."""
    if step.instance["status"] != InstanceStatus.RUNNING:
        return f"instance is {step.instance['status']}"
    if lock is not None:
        held = await took_held_task(
            step, lock.finished, task_id, TaskStatus.COMPLETED, _WAKE_ACTION
        )
    else:
        held = await finish_held_task(
            step,
            task_id,
            expected=TaskStatus.WAITING,
            status=TaskStatus.COMPLETED,
            action=_WAKE_ACTION,
            by=SYSTEM,
        )
    if held is None:  # not waiting or without an active token: say which
        found = await held_task(step, task_id, TaskStatus.WAITING)
        assert isinstance(found, str), f"task {task_id} is held but was not finished"
        return found
    token, node_key = held
    await runner.run(step, await leave(step, token, step.defn.node(node_key)))
    return None


async def task_timed_out(step: Step, task_id: int, deadline_step: int | None = None) -> str | None:
    """A node's timeout policy, or a step of its deadline's escalation
    chain (:func:`flowledger.engine.escalation.escalate`)."""
    found = await held_task(step, task_id, TaskStatus.PENDING)
    if isinstance(found, str):
        return found
    task, _token = found
    node = step.defn.node(task.node_key)
    if node.deadline is not None:
        return await escalation.escalate(step, task, node, deadline_step)
    policy = node.timeout
    if policy is None:
        return "the node has no timeout policy"
    await step.trace(
        "task_timeout", task_id=task_id, node_key=task.node_key, detail={"action": policy.action}
    )
    if policy.action == "auto_approve":
        action = "approve" if task.kind == "approval" else "handle"
        await actions.complete(step, task_id, action, comment="[timeout] auto-approved")
    elif policy.action == "auto_reject":
        if task.kind != "approval":
            return "auto_reject applies to approval tasks only"
        await actions.complete(step, task_id, "reject", comment="[timeout] auto-rejected")
    elif policy.action == "transfer":
        assert policy.transfer_to is not None
        await actions.transfer(step, task_id, policy.transfer_to, comment="[timeout] transferred")
    else:  # notify: an in-app message to the assignee and a task.overdue event
        await task_notices.task_overdue(
            step, task_id=task_id, assignee=task.assignee, node_key=task.node_key
        )
    return None


async def spawn_child(step: Step, task_id: int, *, snapshots: SnapshotCache) -> int | str:
    found = await held_task(step, task_id, TaskStatus.WAITING)
    if isinstance(found, str):
        return found
    task, _token = found
    node = step.defn.node(task.node_key)
    assert node.definition_key is not None
    form = {
        field: evaluate_value(expr, step.form, None) for field, expr in node.input_mapping.items()
    }
    child_id = await start_instance(
        step.conn,
        node.definition_key,
        form=form,
        initiator=step.instance["initiator"],
        tenant=step.instance["tenant_id"],
        now=step.now,
        snapshots=snapshots,
        hooks=step.hooks,
        store=step.store,
        version=node.definition_version,
        parent_instance_id=step.instance_id,
        parent_task_id=task_id,
        trace_id=step.trace_id,
    )
    await step.trace(
        "subprocess_spawned",
        node_key=node.key,
        task_id=task_id,
        detail={"childInstanceId": child_id},
    )
    return child_id


async def join_child(step: Step, task_id: int, child_instance_id: int) -> str | None:
    found = await held_task(step, task_id, TaskStatus.WAITING)
    if isinstance(found, str):
        return found
    task, token = found
    node = step.defn.node(task.node_key)
    child = (
        await step.conn.execute(
            select(workflow_instances.c.status, workflow_instances.c.form_data).where(
                workflow_instances.c.id == child_instance_id
            )
        )
    ).first()
    if child is None:
        return f"child instance {child_instance_id} not found"
    if child.status != InstanceStatus.APPROVED:
        await finish_task(step, task_id, status=TaskStatus.COMPLETED, action="reject", by=SYSTEM)
        failure = NodeFailure(
            "subprocess_failed",
            f"child instance {child_instance_id} ended {child.status}",
            job_id=None,
            retries_exhausted=False,
        )
        await runner.run(step, await node_failed(step, token, node, failure))
        return None
    changes = {
        field: evaluate_value(expr, child.form_data, None)
        for field, expr in node.output_mapping.items()
    }
    await write_form(step, changes, source=f"subprocess:{child_instance_id}")
    await finish_task(step, task_id, status=TaskStatus.COMPLETED, action="handle", by=SYSTEM)
    await step.trace(
        "subprocess_joined",
        node_key=node.key,
        task_id=task_id,
        detail={"childInstanceId": child_instance_id},
    )
    await runner.run(step, await leave(step, token, node))
    return None
