"""The O-12 consistency rules (:mod:`flowledger.ops.diagnostics.consistency`) and the
O-16 health rules (:mod:`flowledger.ops.health.rules`) on a migration's
predicted result (issue 30): the rules the health inspection runs as SQL
over stored rows, evaluated here over the dry run's document of one
instance, so an instance whose migration would leave it stuck is refused
before anything moves. Each problem names its rule (``rule``: the O-12 name,
or the O-16 code where O-12 has none) and, where O-16 reports the same
problem, ``healthRule`` (its O-16 code).

O-12:

- ``running_without_active_token``: no live token would remain;
- ``running_without_active_task``: no open task would remain (O-16
  ``instance_stalled`` too when no unfinished job would remain either);
- ``token_without_task``: an active token would sit on a wait node
  (a human task, delay, trigger, external approval, subprocess) without an
  open task of its own there;
- ``task_without_token`` (O-16 ``token_task_mismatch``): an open task's
  token would not be live, or would stand on another node;
- ``waiting_task_unwakeable`` (O-16 ``delay_missing_wake_job``): a waiting
  delay task without its wake job.

O-16, the rules about a wait's job or callback that hold at any age (the
threshold-only rules — ``waiting_task_stuck``, ``subprocess_waiting`` of a
parent whose child runs, overdue jobs — say how long a wait lasted, which a
migration does not change):

- ``trigger_waiting_no_execution``: a waiting trigger task with no
  ``trigger_dispatch`` job live or finished (nothing will call, nothing
  will call back);
- ``trigger_execution_failed`` / ``external_dispatch_failed``: the task's
  dispatch failed or died and none is live (a broken instance: repair it
  first) — unless a person was handed the node's decision instead (an open
  approval or handle task at the node, as ``dispatchFallback: manual``
  creates), as O-16 has it;
- ``external_dispatch_pending``: a pending external approval task whose
  dispatch neither is live nor succeeded;
- ``subprocess_waiting``: a waiting subprocess task with no running child
  and no live spawn or join job (nothing will ever end the wait)."""

from __future__ import annotations

from typing import Any, Protocol

from flowledger.definitions.model import Node
from flowledger.ops.migration.model import InstanceResult

WAIT_TYPES = frozenset(
    {"approval", "handle", "catch", "delay", "trigger", "external_approval", "subprocess"}
)
BROKEN = frozenset({"failed", "dead"})


class Nodes(Protocol):
    """A version's nodes by key (a definition, or the planner's index of it)."""

    def has_node(self, key: str) -> bool: ...

    def node(self, key: str) -> Node: ...


O12_RULES = frozenset(
    {
        "running_without_active_token",
        "running_without_active_task",
        "token_without_task",
        "task_without_token",
        "waiting_task_unwakeable",
    }
)


def predicted_problems(
    result: InstanceResult,
    target: Nodes,
    finished_jobs: dict[int, set[tuple[str, str]]] | None = None,
) -> list[dict[str, Any]]:
    """The O-12 and O-16 rules the predicted instance breaks: ``{rule,
    healthRule?, nodeKey?, taskId?}``. ``finished_jobs``: per open task, the
    ``(type, status)`` of its finished dispatch jobs."""
    problems = _o12(result, target)
    problems += _o16(result, finished_jobs or {})
    return problems


def _o12(result: InstanceResult, target: Nodes) -> list[dict[str, Any]]:
    problems: list[dict[str, Any]] = []
    live = {int(t["tokenId"]): t for t in result.tokens}
    if not live:
        problems.append({"rule": "running_without_active_token"})
    if not result.tasks:
        problem: dict[str, Any] = {"rule": "running_without_active_task"}
        if not result.jobs:
            problem["healthRule"] = "instance_stalled"
        problems.append(problem)
    tasks_of: dict[int, list[dict[str, Any]]] = {}
    for task in result.tasks:
        if task["tokenId"] is not None:
            tasks_of.setdefault(int(task["tokenId"]), []).append(task)
    for token in live.values():
        node = token["nodeKey"]
        if token["state"] != "active" or not target.has_node(node):
            continue
        own = [t for t in tasks_of.get(int(token["tokenId"]), []) if t["nodeKey"] == node]
        if target.node(node).type in WAIT_TYPES and not own:
            problems.append({"rule": "token_without_task", "nodeKey": node})
    for task in result.tasks:
        token_id = task["tokenId"]
        if token_id is None:
            continue
        holder = live.get(int(token_id))
        if holder is None or holder["nodeKey"] != task["nodeKey"]:
            problems.append(
                {
                    "rule": "task_without_token",
                    "healthRule": "token_task_mismatch",
                    "nodeKey": task["nodeKey"],
                    "taskId": task["taskId"],
                }
            )
    wakes = {j["taskId"] for j in result.jobs if j["type"] == "delay_wake"}
    for task in result.tasks:
        if task["kind"] == "delay" and task["status"] == "waiting" and task["taskId"] not in wakes:
            problems.append(
                {
                    "rule": "waiting_task_unwakeable",
                    "healthRule": "delay_missing_wake_job",
                    "nodeKey": task["nodeKey"],
                    "taskId": task["taskId"],
                }
            )
    return problems


def _o16(
    result: InstanceResult, finished_jobs: dict[int, set[tuple[str, str]]]
) -> list[dict[str, Any]]:
    problems: list[dict[str, Any]] = []
    live: dict[int, set[str]] = {}
    for job in result.jobs:
        if job["taskId"] is not None:
            live.setdefault(int(job["taskId"]), set()).add(job["type"])
    handed = {
        t["nodeKey"]
        for t in result.tasks
        if t["kind"] not in ("external_approval", "trigger", "catch")
    }
    children = {int(s["taskId"]): s["childInstanceIds"] for s in result.subprocesses if s["taskId"]}
    for task in result.tasks:
        if task["taskId"] is None:
            continue
        task_id = int(task["taskId"])
        where = {"nodeKey": task["nodeKey"], "taskId": task_id}
        jobs_live = live.get(task_id, set())
        finished = finished_jobs.get(task_id, set())
        rule = None
        if task["kind"] == "trigger" and task["status"] == "waiting":
            rule = _dispatch_rule(
                "trigger_dispatch",
                jobs_live,
                finished,
                failed="trigger_execution_failed",
                missing="trigger_waiting_no_execution",
            )
        elif task["kind"] == "external_approval" and task["status"] == "pending":
            rule = _dispatch_rule(
                "external_dispatch",
                jobs_live,
                finished,
                failed="external_dispatch_failed",
                missing="external_dispatch_pending",
            )
        elif (
            task["kind"] == "subprocess"
            and task["status"] == "waiting"
            and not children.get(task_id)
            and not jobs_live & {"subprocess_spawn", "subprocess_join"}
        ):
            rule = "subprocess_waiting"
        if rule is not None and not (rule.endswith("_failed") and task["nodeKey"] in handed):
            problems.append({"rule": rule, "healthRule": rule, **where})
    return problems


def _dispatch_rule(
    job_type: str, live: set[str], finished: set[tuple[str, str]], *, failed: str, missing: str
) -> str | None:
    """The O-16 rule a task waiting on a ``job_type`` dispatch breaks, if any:
    none while one is live or one succeeded; ``failed`` when one broke;
    ``missing`` when none ever ran."""
    if job_type in live or (job_type, "succeeded") in finished:
        return None
    if any(kind == job_type and status in BROKEN for kind, status in finished):
        return failed
    return missing
