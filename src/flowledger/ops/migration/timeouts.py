"""Timeouts of a migrated instance's open tasks (issue 30; SPEC E-5): pure,
what the target nodes' timeout policies imply for the tasks the planner
moves onto them.

- a pending approval or handle task landing on a node that declares a
  timeout its source node did not gets a ``task_timeout`` job, due ``now``
  plus the timeout (a newly declared timeout counts from the migration),
  and that due time;
- a task landing on a node that keeps a timeout keeps its job and time;
- the ``task_timeout`` jobs of skipped tasks, and of tasks landing on a
  node without a timeout, are canceled; those tasks' due time is cleared.

Tasks created for new assignees get their timeout where the planner makes
them (:func:`new_task_due`)."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from flowledger.definitions.model import Node
from flowledger.engine.store.migrate import NewTimeout
from flowledger.ops.migration.inputs import NodeIndex
from flowledger.ops.migration.model import TIMEOUT
from flowledger.states import TaskStatus

# the task kinds a node's timeout policy applies to (engine.nodes.people)
TIMED_TYPES = frozenset({"approval", "handle"})


@dataclass
class TimeoutPlan:
    task_due: dict[int, datetime | None] = field(default_factory=dict)
    new_timeouts: list[NewTimeout] = field(default_factory=list)
    cancel_jobs: list[int] = field(default_factory=list)
    #: the ``timeout`` changes of the result, one per node
    changes: list[dict[str, Any]] = field(default_factory=list)


def new_task_due(node: Node, kind: str, now: datetime) -> datetime | None:
    """The due time of a task the migration creates on ``node``."""
    if node.timeout is None or kind not in TIMED_TYPES:
        return None
    return now + node.timeout.after


def plan_timeouts(
    open_tasks: list[Any],
    task_nodes: dict[int, str],
    skip: set[int],
    jobs: list[Any],
    *,
    source: NodeIndex,
    target: NodeIndex,
    now: datetime,
) -> TimeoutPlan:
    """The timeout jobs to add and cancel for ``open_tasks`` (``task_nodes``:
    the moved ones' target nodes; ``skip``: the ones the migration skips;
    ``jobs``: the instance's unfinished jobs)."""
    plan = TimeoutPlan()
    live: dict[int, list[int]] = defaultdict(list)
    for job in jobs:
        if job.type == "task_timeout" and job.task_id is not None:
            live[int(job.task_id)].append(int(job.id))
    counts: dict[str, Counter[str]] = defaultdict(Counter)
    for task in open_tasks:
        task_id = int(task.id)
        new = task_nodes.get(task_id, task.node_key)
        if not target.has_node(new):
            continue  # blocked: node_not_mapped
        after = target.node(new).timeout
        if task_id in skip or after is None:
            if live.get(task_id):
                plan.cancel_jobs.extend(live[task_id])
                counts[new]["canceled"] += len(live[task_id])
            if task_id not in skip and task.due_at is not None:
                plan.task_due[task_id] = None
            continue
        before = source.node(task.node_key).timeout if source.has_node(task.node_key) else None
        if (
            task.status == TaskStatus.PENDING
            and task.kind in TIMED_TYPES
            and before is None
            and not live.get(task_id)
        ):
            due = now + after.after
            plan.task_due[task_id] = due
            plan.new_timeouts.append(NewTimeout(task_id, new, due))
            counts[new]["added"] += 1
    plan.changes = [
        {"kind": TIMEOUT, "nodeKey": node, "added": found["added"], "canceled": found["canceled"]}
        for node, found in sorted(counts.items())
    ]
    return plan
