"""The English texts of the consistency conclusions and the verdict of one
instance (SPEC O-10, O-12), each made only of its ``messageParams`` (JSON
values, camelCase) and, for the verdict, its repair's ``action`` / ``params``
— so a client can word them in its own language keyed by the conclusion's
``rule`` / the verdict's ``code`` (the console does: ``instance:finding.*``,
``instance:verdict.*``). The CLI and clients read the English ``message``.
Pure text; no queries.

Conclusion params by rule: ``task_without_token`` taskId, nodeKey;
``token_without_task`` tokenId, nodeKey; ``waiting_task_unwakeable``
nodeKeys (a list: the waiting nodes, sorted); ``external_dispatch_failed`` /
``trigger_execution_failed`` nodeKey, jobId, errorCode (the job's last
error code), outcomeUnconfirmed (L-17: the call may have reached the
receiver); ``event_dispatch_failed`` / ``event_dispatch_pending`` count,
ageMinutes; the two ``running_without_*`` rules none. A conclusion of an
inspection rule O-12 does not name (``delay_missing_wake_job``,
``delay_overdue``, ``task_timeout_overdue``, ``trigger_waiting_no_execution``,
``external_dispatch_pending``, ``subprocess_waiting``, ``waiting_task_stuck``,
``instance_stalled``, ``webhook_delivery_failed``) has the inspection item's
``messageParams`` and its message word for word
(:func:`flowledger.ops.health.messages.message_params`).

Verdict codes: the rule of the conclusion it names (its params are that
conclusion's; the repair suffix is made of ``action`` and ``params``), or
what a healthy instance is doing: ``suspended``; ``ended`` (status);
``waiting_for_people`` (assignees, ageMinutes); ``waiting_too_long``
(assignees, ageMinutes, overdue; action ``remind`` names the assignee);
``waiting_for_external_approval`` (nodeKey, ageMinutes);
``waiting_for_system_task`` (taskKind, nodeKey, dueAt: the delay's due time
as ISO 8601 or null, ageMinutes); ``job_in_flight`` (jobId, jobType);
``nothing_wrong``; ``no_such_instance``."""

from __future__ import annotations

from typing import Any

from flowledger.ops.health.messages import age_text

# what the verdict of a healthy instance can say (its ``code``)
HEALTHY_CODES = (
    "suspended",
    "ended",
    "waiting_for_people",
    "waiting_too_long",
    "waiting_for_external_approval",
    "waiting_for_system_task",
    "job_in_flight",
    "nothing_wrong",
    "no_such_instance",
)
_SYSTEM_TASKS = {"delay": "the delay", "subprocess": "the subprocess", "trigger": "the trigger"}


def _node(key: Any) -> str:
    return f"«{key}»"


def _at(key: Any) -> str:
    """A node as the health inspection's messages name it."""
    return "its node" if key is None else _node(key)


def _inspection_message(rule: str, p: dict[str, Any]) -> str | None:
    """The message of an inspection rule O-12 does not name: the health
    inspection's own (``health_messages.describe``), made of its params."""
    node = _at(p.get("nodeKey"))
    ago = age_text(p["ageMinutes"]) if "ageMinutes" in p else ""
    if rule == "delay_missing_wake_job":
        return f"the delay at {node} (task {p['taskId']}) has no wake job: it will never wake"
    if rule == "delay_overdue":
        return (
            f"the delay at {node} was due {ago} ago and still waits "
            f"(job {p['jobId']} {p['jobStatus']})"
        )
    if rule == "task_timeout_overdue":
        return (
            f"the timeout of task {p['taskId']} at {node} was due {ago} ago "
            f"and is not handled (job {p['jobId']})"
        )
    if rule == "trigger_waiting_no_execution":
        return f"the trigger at {node} has waited {ago} and was never executed"
    if rule == "external_dispatch_pending":
        return f"the external approval at {node} has waited {ago} and was not dispatched"
    if rule == "subprocess_waiting":
        child = p["childInstanceId"]
        which = f" (child instance {child})" if child else " (no child started)"
        return f"the parent has waited {ago} at {node} for its subprocess{which}"
    if rule == "waiting_task_stuck":
        return f"task {p['taskId']} at {node} has waited {ago} for {p['assignee']}"
    if rule == "instance_stalled":
        return f"the instance is running but has no open task and no job in flight (since {ago})"
    if rule == "webhook_delivery_failed":
        return (
            f"{p['count']} webhook delivery(ies) of the instance's events failed for good "
            f"(newest job {p['jobId']}, oldest since {ago})"
        )
    return None


def conclusion_message(rule: str, p: dict[str, Any]) -> str:
    """The English message of a conclusion of ``rule`` with params ``p``."""
    if rule == "running_without_active_task":
        return "the instance is running but has no pending or waiting task"
    if rule == "running_without_active_token":
        return "the instance is running but no token is active, so nothing can move it"
    if rule == "task_without_token":
        return (
            f"task {p['taskId']} at {_node(p['nodeKey'])} holds no active token, "
            "so acting on it will fail"
        )
    if rule == "token_without_task":
        return f"token {p['tokenId']} at {_node(p['nodeKey'])} is active but no open task holds it"
    if rule == "waiting_task_unwakeable":
        nodes = ", ".join(_node(k) for k in p["nodeKeys"])
        return (
            f"only waiting tasks remain ({nodes}) and no job, callback, child instance "
            "or pending task can wake them (suspected deadlock)"
        )
    if rule in ("external_dispatch_failed", "trigger_execution_failed"):
        what = "external approval dispatch" if rule.startswith("external") else "trigger"
        at = f"the {what} at {_node(p['nodeKey'])}"
        if p["outcomeUnconfirmed"]:
            return (
                f"{at} may or may not have reached the receiver (job {p['jobId']}: outcome "
                "unconfirmed); confirm it with the receiver before any retry"
            )
        return f"{at} failed (job {p['jobId']}: {p['errorCode']})"
    if rule in ("event_dispatch_failed", "event_dispatch_pending"):
        what = "could not be dispatched" if rule == "event_dispatch_failed" else "are still pending"
        return (
            f"{p['count']} event(s) of the instance {what} "
            f"(oldest since {age_text(p['ageMinutes'])})"
        )
    message = _inspection_message(rule, p)
    if message is None:
        raise KeyError(rule)
    return message


def repair_suffix(action: str | None, params: dict[str, Any]) -> str:
    """What a verdict adds to the conclusion it names: its repair."""
    if action == "force_jump" and params.get("target") is None and "candidates" not in params:
        return "; force jump to the node it should continue at"
    if action == "force_jump" and params.get("target") is None:
        branches = ", ".join(_node(b) for b in params.get("candidates", []))
        return (
            f"; the gateway matched no branch: correct the form, or force jump to one of {branches}"
        )
    if action == "force_jump":
        return f"; force jump to {_node(params['target'])}"
    if action == "job_retry":
        return f"; retry job {params['jobId']}"
    if action == "recovery":
        return f"; run the recovery action {params['action']}"
    if action == "remind":
        return f"; remind {params['assignee']}"
    if action == "replay":
        return "; replay its failed webhook deliveries"
    return ""


def problem_verdict(conclusion: str, action: str | None, params: dict[str, Any]) -> str:
    """The verdict naming a conclusion: its message as a sentence, with the repair."""
    return conclusion[0].upper() + conclusion[1:] + repair_suffix(action, params) + "."


def healthy_verdict(
    code: str, p: dict[str, Any], action: str | None, params: dict[str, Any]
) -> str:
    """The verdict of an instance with no conclusion (``code`` in
    :data:`HEALTHY_CODES`), with its repair (``remind``) if any."""
    since = f" since {age_text(p['ageMinutes'])}" if "ageMinutes" in p else ""
    if code == "suspended":
        text = "nothing is wrong: the instance is suspended and moves again once resumed"
    elif code == "ended":
        text = f"nothing is wrong: the instance is {p['status']}"
    elif code == "waiting_for_people":
        text = f"nothing is wrong: waiting for {', '.join(p['assignees'])}{since}"
    elif code == "waiting_too_long":
        overdue = " (overdue)" if p["overdue"] else ""
        text = f"nothing is broken: waiting for {', '.join(p['assignees'])}{since}{overdue}"
    elif code == "waiting_for_external_approval":
        text = (
            f"nothing is wrong: waiting for the external approval at {_node(p['nodeKey'])}{since}"
        )
    elif code == "waiting_for_system_task":
        kind = p["taskKind"]
        what = _SYSTEM_TASKS.get(kind, f"the {kind} task")
        until = f" until {p['dueAt']}" if kind == "delay" and p["dueAt"] else ""
        text = f"nothing is wrong: waiting for {what} at {_node(p['nodeKey'])}{until}{since}"
    elif code == "job_in_flight":
        text = f"nothing is wrong: job {p['jobId']} ({p['jobType']}) is in flight"
    elif code == "nothing_wrong":
        text = "nothing is wrong"
    elif code == "no_such_instance":
        text = "no such instance"
    else:
        raise KeyError(code)
    return text + repair_suffix(action, params)
