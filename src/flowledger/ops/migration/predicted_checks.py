"""The O-12 consistency rules (:mod:`flowledger.ops.consistency`) on a
migration's predicted result (issue 30): the rules the health inspection
runs as SQL over stored rows, evaluated here over the dry run's document
of one instance, so an instance whose migration would leave it stuck is
refused before anything moves. The rules, with O-12's names:

- ``running_without_active_token``: no live token would remain;
- ``running_without_active_task``: no open task would remain;
- ``token_without_task``: an active token would sit on a wait node
  (a human task, delay, trigger, external approval, subprocess) without an
  open task of its own there;
- ``task_without_token``: an open task's token would not be live, or would
  stand on another node;
- ``waiting_task_unwakeable``: a waiting delay task without its wake job."""

from __future__ import annotations

from typing import Any

from flowledger.definitions.model import ProcessDefinition
from flowledger.ops.migration.model import InstanceResult

WAIT_TYPES = frozenset(
    {"approval", "handle", "catch", "delay", "trigger", "external_approval", "subprocess"}
)


def predicted_problems(result: InstanceResult, target: ProcessDefinition) -> list[dict[str, Any]]:
    """The O-12 rules the predicted instance breaks: ``{rule, nodeKey?, …}``."""
    problems: list[dict[str, Any]] = []
    live = {int(t["tokenId"]): t for t in result.tokens}
    if not live:
        problems.append({"rule": "running_without_active_token"})
    if not result.tasks:
        problems.append({"rule": "running_without_active_task"})
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
                {"rule": "task_without_token", "nodeKey": task["nodeKey"], "taskId": task["taskId"]}
            )
    wakes = {j["taskId"] for j in result.jobs if j["type"] == "delay_wake"}
    for task in result.tasks:
        if task["kind"] == "delay" and task["status"] == "waiting" and task["taskId"] not in wakes:
            problems.append(
                {
                    "rule": "waiting_task_unwakeable",
                    "nodeKey": task["nodeKey"],
                    "taskId": task["taskId"],
                }
            )
    return problems
