"""Force jump and node recovery (SPEC O-4, O-6): an operator moves execution
positions of a running instance, inside the caller's step (instance row
locked first, L-13), so it serializes with every task action and job step
of the instance.

:func:`force_jump` — without ``from_node`` every live token (active or
parked) is consumed and one new token enters ``target`` (empty fork stack);
with ``from_node`` only the tokens at that node are consumed and one token
enters ``target`` with their common fork frames, so the other parallel
branches keep running and a join downstream still counts this branch. The
open tasks of the removed positions become ``skipped`` with the comment
``[Admin force jump to «target»] reason``; their advancement jobs (delay
wake, timeout, trigger / external dispatch, subprocess spawn / join; all of
the instance's without ``from_node``) are canceled; the instance's error is
cleared; then the runner enters ``target`` and moves on to the next wait
state. :class:`JumpOutcome` says exactly what changed — the tasks and jobs
created are read back from this step's trace rows.

:func:`skip_and_advance` — batch recovery of one instance: the active
tokens at a node have their open tasks skipped (comment ``[Admin batch
recovery] reason``), their jobs canceled, and leave along the node's
outgoing edge.

A preview is the same function in a transaction the facade rolls back
(:meth:`flowledger.engine.Engine.force_jump` with ``preview=True``), so the
preview is exactly the result."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import func, select, update

from flowledger.db.engine_schema import workflow_tasks, workflow_tokens, workflow_trace
from flowledger.db.schema import workflow_jobs
from flowledger.engine import interventions, lifecycle, runner, write_buffer
from flowledger.engine.job_types import ADVANCEMENT_TYPES
from flowledger.engine.moves import leave
from flowledger.engine.step import Step
from flowledger.engine.tokens import Token, create_token
from flowledger.errors import ConflictError, FlowledgerError
from flowledger.states import InstanceStatus, JobStatus, TaskStatus, TokenState

MAX_REASON = 2000


class JumpTargetInvalid(FlowledgerError):
    """The target (or fromNode) is not a node of the instance's snapshot (422)."""

    code = "node_unknown"


class ReasonRequired(FlowledgerError):
    code = "reason_required"


class NoPosition(ConflictError):
    """No execution position at the node the operator named (409)."""

    code = "no_token_at_node"


@dataclass
class JumpOutcome:
    instance_id: int
    target: str
    from_node: str | None
    reason: str
    terminated_tasks: list[dict[str, Any]] = field(default_factory=list)
    consumed_tokens: list[dict[str, Any]] = field(default_factory=list)
    canceled_jobs: list[dict[str, Any]] = field(default_factory=list)
    created_tokens: list[dict[str, Any]] = field(default_factory=list)
    created_tasks: list[dict[str, Any]] = field(default_factory=list)
    created_jobs: list[dict[str, Any]] = field(default_factory=list)
    instance_status: str = InstanceStatus.RUNNING.value

    def to_public(self) -> dict[str, Any]:
        return {
            "instanceId": self.instance_id,
            "target": self.target,
            "fromNode": self.from_node,
            "reason": self.reason,
            "terminatedTasks": self.terminated_tasks,
            "consumedTokens": self.consumed_tokens,
            "canceledJobs": self.canceled_jobs,
            "createdTokens": self.created_tokens,
            "createdTasks": self.created_tasks,
            "createdJobs": self.created_jobs,
            "instanceStatus": self.instance_status,
        }


def jump_comment(target: str, reason: str) -> str:
    return f"[Admin force jump to «{target}»] {reason}"


def recovery_comment(reason: str) -> str:
    return f"[Admin batch recovery] {reason}"


def clean_reason(reason: str | None) -> str:
    text = (reason or "").strip()
    if not text:
        raise ReasonRequired("a reason is required and must not be blank", field="reason")
    if len(text) > MAX_REASON:
        raise ReasonRequired(f"reason is longer than {MAX_REASON} characters", field="reason")
    return text


def _node(step: Step, key: str, field_name: str) -> None:
    if not step.defn.has_node(key):
        raise JumpTargetInvalid(
            f"{key!r} is not a node of {step.defn.key!r} version "
            f"{step.instance['definition_version']}",
            field=field_name,
        )


async def _live_tokens(step: Step, node_key: str | None) -> list[Any]:
    await write_buffer.flush_for_read(step.conn)
    t = workflow_tokens.c
    query = select(workflow_tokens).where(
        t.instance_id == step.instance_id, t.state != TokenState.CONSUMED
    )
    if node_key is not None:
        query = query.where(t.node_key == node_key)
    return list((await step.conn.execute(query.order_by(t.id))).mappings().all())


async def _open_tasks(step: Step, token_ids: list[int], node_key: str | None) -> list[Any]:
    """Open tasks of the instance (``node_key`` None) or of those tokens / that node."""
    t = workflow_tasks.c
    query = select(workflow_tasks).where(
        t.instance_id == step.instance_id,
        t.status.in_([TaskStatus.PENDING, TaskStatus.WAITING]),
    )
    if node_key is not None:
        query = query.where(t.token_id.in_(token_ids) | (t.node_key == node_key))
    await write_buffer.write_held(step.conn)
    rows = (await step.conn.execute(query.order_by(t.id).with_for_update())).mappings().all()
    return list(rows)


async def _trace_marker(step: Step) -> int:
    await write_buffer.flush(step.conn)  # rows before the marker get ids before it
    found = (
        await step.conn.execute(
            select(func.max(workflow_trace.c.id)).where(
                workflow_trace.c.instance_id == step.instance_id
            )
        )
    ).scalar_one_or_none()
    return int(found or 0)


async def _skip_tasks(step: Step, rows: list[Any], comment: str) -> list[dict[str, Any]]:
    ids = [int(r["id"]) for r in rows]
    if ids:
        await step.conn.execute(
            update(workflow_tasks)
            .where(workflow_tasks.c.id.in_(ids))
            .values(
                status=TaskStatus.SKIPPED,
                comment=comment,
                finished_at=step.now,
                finished_by=step.actor,
            )
        )
    for task_id in ids:
        await step.trace(
            "task_completed", task_id=task_id, detail={"status": "skipped", "action": None}
        )
        await step.emit("task.completed", {"taskId": task_id, "status": "skipped", "action": None})
    return [
        {
            "taskId": int(r["id"]),
            "nodeKey": r["node_key"],
            "kind": r["kind"],
            "assignee": r["assignee"],
            "status": r["status"],
        }
        for r in rows
    ]


async def _consume(step: Step, rows: list[Any]) -> list[dict[str, Any]]:
    ids = [int(r["id"]) for r in rows]
    if ids:
        await step.conn.execute(
            update(workflow_tokens)
            .where(workflow_tokens.c.id.in_(ids))
            .values(state=TokenState.CONSUMED, consumed_at=step.now)
        )
    for row in rows:
        await step.trace("token_consumed", node_key=row["node_key"], token_id=int(row["id"]))
    return [
        {
            "tokenId": int(r["id"]),
            "nodeKey": r["node_key"],
            "state": r["state"],
            "forkStack": list(r["fork_stack"] or []),
        }
        for r in rows
    ]


async def _created_since(step: Step, marker: int, outcome: JumpOutcome) -> None:
    """Fill the created tasks and jobs from this step's trace rows."""
    await write_buffer.flush(step.conn)
    rows = (
        await step.conn.execute(
            select(workflow_trace.c.event, workflow_trace.c.task_id, workflow_trace.c.job_id)
            .where(
                workflow_trace.c.instance_id == step.instance_id,
                workflow_trace.c.id > marker,
                workflow_trace.c.event.in_(["task_created", "job_enqueued"]),
            )
            .order_by(workflow_trace.c.id)
        )
    ).all()
    task_ids = [int(r.task_id) for r in rows if r.event == "task_created" and r.task_id]
    job_ids = [int(r.job_id) for r in rows if r.event == "job_enqueued" and r.job_id]
    if task_ids:
        tasks = (
            await step.conn.execute(
                select(workflow_tasks)
                .where(workflow_tasks.c.id.in_(task_ids))
                .order_by(workflow_tasks.c.id)
            )
        ).mappings()
        outcome.created_tasks = [
            {
                "taskId": int(t["id"]),
                "nodeKey": t["node_key"],
                "kind": t["kind"],
                "assignee": t["assignee"],
                "status": t["status"],
                "dueAt": t["due_at"],
            }
            for t in tasks
        ]
    if job_ids:
        jobs = (
            await step.conn.execute(
                select(workflow_jobs)
                .where(workflow_jobs.c.id.in_(job_ids))
                .order_by(workflow_jobs.c.id)
            )
        ).mappings()
        outcome.created_jobs = [
            {
                "jobId": int(j["id"]),
                "type": j["type"],
                "nodeKey": j["node_key"],
                "taskId": j["task_id"],
                "runAt": j["run_at"],
            }
            for j in jobs
        ]


def _closed_changes(
    tasks: list[dict[str, Any]], jobs: list[dict[str, Any]]
) -> list[interventions.Change]:
    """The intervention's changes of the tasks skipped and the jobs canceled."""
    skipped, canceled = TaskStatus.SKIPPED.value, JobStatus.CANCELED.value
    return [
        *(interventions.change(f"task.{t['taskId']}.status", t["status"], skipped) for t in tasks),
        *(interventions.change(f"job.{j['jobId']}.status", j["status"], canceled) for j in jobs),
    ]


def _common_stack(rows: list[Any]) -> list[int]:
    stacks = [list(r["fork_stack"] or []) for r in rows]
    if not stacks:
        return []
    common: list[int] = []
    for items in zip(*stacks, strict=False):
        if all(item == items[0] for item in items):
            common.append(items[0])
        else:
            break
    return common


async def force_jump(
    step: Step, *, target: str, reason: str, from_node: str | None = None
) -> JumpOutcome:
    """Move the instance's execution (all of it, or the tokens at
    ``from_node``) to ``target``; see the module docstring."""
    reason = clean_reason(reason)
    lifecycle.require_status(step, InstanceStatus.RUNNING)
    _node(step, target, "target")
    if from_node is not None:
        _node(step, from_node, "fromNode")
    outcome = JumpOutcome(step.instance_id, target, from_node, reason)
    tokens = await _live_tokens(step, from_node)
    if from_node is not None and not tokens:
        raise NoPosition(
            f"instance {step.instance_id} has no execution position at {from_node!r}",
            field="fromNode",
        )
    marker = await _trace_marker(step)
    token_ids = [int(r["id"]) for r in tokens]
    tasks = await _open_tasks(step, token_ids, from_node)
    comment = jump_comment(target, reason)
    await write_buffer.flush_jobs(step.conn)
    outcome.canceled_jobs = await step.store.ledger.jobs_cancel_advancement(
        step.conn,
        step.instance_id,
        types=ADVANCEMENT_TYPES,
        now=step.now,
        reason=comment,
        task_ids=None if from_node is None else [int(t["id"]) for t in tasks],
    )
    outcome.terminated_tasks = await _skip_tasks(step, tasks, comment)
    outcome.consumed_tokens = await _consume(step, tokens)
    stack = [] if from_node is None else _common_stack(tokens)
    await step.set_instance(error=None)
    token = await create_token(step, target, stack)
    outcome.created_tokens = [{"tokenId": token.id, "nodeKey": target, "forkStack": stack}]
    await step.trace(
        "force_jump",
        node_key=target,
        token_id=token.id,
        detail={
            "target": target,
            "fromNode": from_node,
            "reason": reason,
            "terminatedTasks": [t["taskId"] for t in outcome.terminated_tasks],
            "consumedTokens": token_ids,
            "canceledJobs": [j["jobId"] for j in outcome.canceled_jobs],
        },
    )
    await interventions.record_in_step(
        step,
        interventions.FORCE_JUMP,
        reason=reason,
        node_key=target,
        changes=[
            interventions.change(
                "node", interventions.nodes_text([str(r["node_key"]) for r in tokens]), target
            ),
            *_closed_changes(outcome.terminated_tasks, outcome.canceled_jobs),
        ],
    )
    await step.emit(
        "instance.force_jumped", {"target": target, "fromNode": from_node, "reason": reason}
    )
    await runner.run(step, [token])
    await _created_since(step, marker, outcome)
    outcome.instance_status = str(step.instance["status"])
    return outcome


@dataclass
class RecoveryOutcome:
    instance_id: int
    node_key: str
    skipped_tasks: list[dict[str, Any]]
    canceled_jobs: list[dict[str, Any]]
    token_ids: list[int]
    to_nodes: list[str]


async def skip_and_advance(step: Step, *, node_key: str, reason: str) -> RecoveryOutcome | str:
    """Skip the active tokens' open tasks at ``node_key`` and leave along its
    outgoing edge. Returns why nothing was done (a string) when the instance
    is not running or holds no active token there."""
    reason = clean_reason(reason)
    if step.instance["status"] != InstanceStatus.RUNNING:
        return f"instance is {step.instance['status']}"
    if not step.defn.has_node(node_key):
        return f"{node_key!r} is not a node of this instance's definition version"
    rows = [r for r in await _live_tokens(step, node_key) if r["state"] == TokenState.ACTIVE]
    if not rows:
        return f"no active token at {node_key!r}"
    node = step.defn.node(node_key)
    edges = step.defn.outgoing(node_key)
    if not edges:
        raise NoPosition(f"node {node_key!r} has no outgoing edge", field="nodeKey")
    token_ids = [int(r["id"]) for r in rows]
    tasks = await _open_tasks(step, token_ids, node_key)
    comment = recovery_comment(reason)
    await write_buffer.flush_jobs(step.conn)
    canceled = await step.store.ledger.jobs_cancel_advancement(
        step.conn,
        step.instance_id,
        types=ADVANCEMENT_TYPES,
        now=step.now,
        reason=comment,
        task_ids=[int(t["id"]) for t in tasks],
    )
    skipped = await _skip_tasks(step, tasks, comment)
    await step.set_instance(error=None)
    await interventions.record_in_step(
        step,
        interventions.BATCH_RECOVERY,
        reason=reason,
        node_key=node_key,
        changes=[
            interventions.change("node", node_key, interventions.nodes_text([edges[0].to])),
            *_closed_changes(skipped, canceled),
        ],
    )
    await step.trace(
        "node_recovered",
        node_key=node_key,
        detail={
            "reason": reason,
            "tokens": token_ids,
            "skippedTasks": [t["taskId"] for t in skipped],
        },
    )
    moving: list[Token] = []
    for row in rows:
        token = Token(int(row["id"]), str(row["node_key"]), list(row["fork_stack"] or []))
        moving.extend(await leave(step, token, node))
    await runner.run(step, moving)
    return RecoveryOutcome(step.instance_id, node_key, skipped, canceled, token_ids, [edges[0].to])
