"""Task notifications (SPEC X-7, E-6 timeout ``notify``, C-1 ``notify``): an
in-app message to a task's assignee, written in the step's transaction so it
exists exactly when the step that caused it commits.

In-app messages are the channel the engine writes itself. Email and SMS
leave the process and so never run inside a step: every notice is also an
outbox event (``task.overdue``, ``task.repair_needed``), and an automation
rule on that event (SPEC X-6, ``notify`` action with channel email or sms)
sends it through the ledger with retries and receipts."""

from __future__ import annotations

from flowledger.engine.step import Step
from flowledger.notify.messages import post_message


def _node_label(step: Step, node_key: str) -> str:
    node = step.defn.node(node_key) if step.defn.has_node(node_key) else None
    return (node.name if node is not None and node.name else None) or node_key


async def notify_assignee(
    step: Step,
    *,
    task_id: int,
    assignee: str,
    node_key: str,
    kind: str,
    title: str,
    body: str,
) -> int:
    """Post one in-app message about ``task_id`` to ``assignee``."""
    return await post_message(
        step.conn,
        tenant=step.instance["tenant_id"],
        recipient=assignee,
        title=title,
        body=body,
        kind=kind,
        link=f"/tasks/{task_id}",
        now=step.now,
    )


async def task_overdue(step: Step, *, task_id: int, assignee: str, node_key: str) -> None:
    """The timeout policy ``notify``: tell the assignee, emit ``task.overdue``."""
    label = _node_label(step, node_key)
    instance = f"{step.instance['definition_key']} #{step.instance_id}"
    await notify_assignee(
        step,
        task_id=task_id,
        assignee=assignee,
        node_key=node_key,
        kind="task_overdue",
        title=f"Overdue: {label}",
        body=f"Your task at {label} in {instance} is past its due time.",
    )
    await step.emit("task.overdue", {"taskId": task_id, "assignee": assignee, "nodeKey": node_key})
