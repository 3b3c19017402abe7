"""What an operator reads for each health problem (SPEC O-16): one sentence
saying what is wrong, the suggestion naming the repair (force jump, a
targeted recovery action, a job retry, remind / transfer, a replay, …),
for the console's repair link the recovery action (O-18) that suggestion
names, and the repair itself as ``{action, params}`` (:func:`repair`: the
one the instance drawer offers for the same problem, O-12).
:func:`message_params` gives the pieces those two texts are made of (JSON
scalars, camelCase), so a client can word them in its own language keyed by
the rule code. Pure text; no queries."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from flowledger.ops.health.inspection import Problem
from flowledger.states import EXTERNAL_OUTCOME_UNCONFIRMED


def age(since: datetime, now: datetime) -> str:
    """A short human age: ``45 min``, ``3 h``, ``2 d``."""
    return age_text(age_minutes(since, now))


def age_text(minutes: int) -> str:
    """:func:`age` from whole minutes: ``45 min``, ``3 h``, ``2 d``."""
    if minutes < 60:
        return f"{max(1, minutes)} min"
    if minutes < 1440:
        return f"{minutes // 60} h"
    return f"{minutes // 1440} d"


def age_minutes(since: datetime, now: datetime) -> int:
    """Whole minutes since ``since`` (at least 0): :func:`age` is exactly
    ``max(1, m) min`` under an hour, ``m // 60 h`` under a day, else
    ``m // 1440 d``."""
    return max(0, int((now - since).total_seconds())) // 60


def _node(p: Problem) -> str:
    return f"«{p.node_key}»" if p.node_key else "its node"


# the targeted recovery action (SPEC O-18) each rule's suggestion names
RECOVERY_ACTIONS: dict[str, str] = {
    "external_dispatch_failed": "external-dispatch",
    "external_dispatch_pending": "external-dispatch",
    "trigger_execution_failed": "trigger-dispatch",
    "trigger_waiting_no_execution": "trigger-dispatch",
    "subprocess_waiting": "subprocess",
    "delay_missing_wake_job": "delay-wake",
    "delay_overdue": "delay-wake",
    "task_timeout_overdue": "task-timeout",
    "workflow_event_outbox_failed": "event-dispatch",
    "workflow_event_outbox_pending": "event-dispatch",
}


def recovery_action(p: Problem) -> str | None:
    """The recovery action the suggestion names, or None when the repair is
    on the instance (force jump, remind / transfer) or needs a person first
    (a trigger whose outcome is unconfirmed: never resent, L-17)."""
    if p.rule == "trigger_execution_failed" and p.detail == EXTERNAL_OUTCOME_UNCONFIRMED:
        return None
    return RECOVERY_ACTIONS.get(p.rule)


WEBHOOK_DELIVERY = "webhook_delivery"
#: the job statuses a replay of a failed webhook delivery takes (SPEC L-24)
REPLAY_STATUSES = ["dead", "failed"]


def repair(p: Problem) -> dict[str, Any]:
    """The repair of one problem as ``{action, params}``, the same in the
    inspection's item and the instance drawer's conclusion (SPEC O-12,
    O-16): ``force_jump`` (``target``: the node, or null to pick one),
    ``job_retry`` (``jobId``), ``recovery`` (``action``: the O-18 action,
    ``jobId``), ``remind`` (``taskId``, ``assignee``), ``replay`` (the body
    of ``POST /engine/jobs/replay-dead``: ``types``, ``instanceId``,
    ``statuses``)."""
    if p.rule == "token_task_mismatch":
        return {"action": "force_jump", "params": {"target": p.node_key}}
    if p.rule == "instance_stalled":
        return {"action": "force_jump", "params": {"target": None}}
    if p.rule in ("external_dispatch_failed", "trigger_execution_failed"):
        return {"action": "job_retry", "params": {"jobId": p.job_id}}
    if p.rule == "waiting_task_stuck":
        return {"action": "remind", "params": {"taskId": p.task_id, "assignee": p.detail}}
    if p.rule == "webhook_delivery_failed":
        return {
            "action": "replay",
            "params": {
                "types": [WEBHOOK_DELIVERY],
                "instanceId": p.instance_id,
                "statuses": list(REPLAY_STATUSES),
            },
        }
    return {"action": "recovery", "params": {"action": RECOVERY_ACTIONS[p.rule], "jobId": p.job_id}}


def describe(p: Problem, now: datetime) -> tuple[str, str]:
    """``(message, suggestion)`` of one problem."""
    ago = age(p.since, now)
    node, job, task = _node(p), f"job {p.job_id}", f"task {p.task_id}"
    unconfirmed = p.detail == EXTERNAL_OUTCOME_UNCONFIRMED
    texts: dict[str, tuple[str, str]] = {
        "token_task_mismatch": (
            f"{task} at {node} is open but holds no active token (for {ago}): acting on it fails",
            f"force jump to {node}",
        ),
        "external_dispatch_failed": (
            f"the external approval at {node} could not be dispatched ({job} {p.detail})",
            f"retry {job}, or recovery external-dispatch",
        ),
        "trigger_execution_failed": (
            f"the trigger at {node} failed ({job} {p.detail}); the flow waits there",
            (
                f"confirm the outcome with the receiver, then retry {job} or force jump past {node}"
                if unconfirmed
                else f"retry {job}, or recovery trigger-dispatch"
            ),
        ),
        "delay_missing_wake_job": (
            f"the delay at {node} ({task}) has no wake job: it will never wake",
            "recovery delay-wake (recreates the wake job)",
        ),
        "delay_overdue": (
            f"the delay at {node} was due {ago} ago and still waits ({job} {p.detail})",
            "check that a worker runs the ledger pool; recovery delay-wake",
        ),
        "task_timeout_overdue": (
            f"the timeout of {task} at {node} was due {ago} ago and is not handled ({job})",
            "check that a worker runs the ledger pool; recovery task-timeout",
        ),
        "trigger_waiting_no_execution": (
            f"the trigger at {node} has waited {ago} and was never executed",
            "recovery trigger-dispatch",
        ),
        "external_dispatch_pending": (
            f"the external approval at {node} has waited {ago} and was not dispatched",
            "recovery external-dispatch",
        ),
        "subprocess_waiting": (
            f"the parent has waited {ago} at {node} for its subprocess"
            + (f" (child instance {p.detail})" if p.detail else " (no child started)"),
            "look at the child instance; recovery subprocess",
        ),
        "waiting_task_stuck": (
            f"{task} at {node} has waited {ago} for {p.detail}",
            "remind or transfer the assignee, or give the node a timeout policy",
        ),
        "workflow_event_outbox_failed": (
            f"{p.detail} event(s) could not be dispatched (oldest {ago} ago)",
            "recovery event-dispatch",
        ),
        "workflow_event_outbox_pending": (
            f"{p.detail} event(s) pending for more than {ago}",
            "check that a worker runs the event relay; recovery event-dispatch",
        ),
        "instance_stalled": (
            f"the instance is running but has no open task and no job in flight (since {ago})",
            "force jump to the node it should continue at",
        ),
        "webhook_delivery_failed": (
            f"{p.detail} webhook delivery(ies) of the instance's events failed for good "
            f"(newest {job}, oldest since {ago})",
            "replay the instance's failed webhook deliveries (receivers dedupe on the event id)",
        ),
    }
    return texts[p.rule]


def _int_or_none(value: str | None) -> int | None:
    return int(value) if value else None


def message_params(p: Problem, now: datetime) -> dict[str, Any]:
    """The values :func:`describe` interpolates into the message and
    suggestion of ``p``, by rule: ``nodeKey`` (null: "its node"), ``taskId``,
    ``jobId``, ``ageMinutes`` (see :func:`age_minutes`), ``errorCode`` (the
    failed job's last error code, else its status), ``outcomeUnconfirmed``
    (the suggestion asks to confirm the outcome first), ``jobStatus``,
    ``childInstanceId`` (null: no child started), ``assignee``, ``count``
    (events, or failed webhook deliveries)."""
    minutes = age_minutes(p.since, now)
    node: dict[str, Any] = {"nodeKey": p.node_key}
    if p.rule in ("external_dispatch_failed", "trigger_execution_failed"):
        failed = {**node, "jobId": p.job_id, "errorCode": p.detail}
        if p.rule == "external_dispatch_failed":
            return failed
        return {**failed, "outcomeUnconfirmed": p.detail == EXTERNAL_OUTCOME_UNCONFIRMED}
    if p.rule == "delay_missing_wake_job":
        return {**node, "taskId": p.task_id}
    if p.rule == "delay_overdue":
        return {**node, "ageMinutes": minutes, "jobId": p.job_id, "jobStatus": p.detail}
    if p.rule == "task_timeout_overdue":
        return {"taskId": p.task_id, **node, "ageMinutes": minutes, "jobId": p.job_id}
    if p.rule in ("token_task_mismatch", "waiting_task_stuck"):
        task = {"taskId": p.task_id, **node, "ageMinutes": minutes}
        return task if p.rule == "token_task_mismatch" else {**task, "assignee": p.detail}
    if p.rule in ("trigger_waiting_no_execution", "external_dispatch_pending"):
        return {**node, "ageMinutes": minutes}
    if p.rule == "subprocess_waiting":
        return {**node, "ageMinutes": minutes, "childInstanceId": _int_or_none(p.detail)}
    if p.rule in ("workflow_event_outbox_failed", "workflow_event_outbox_pending"):
        return {"count": _int_or_none(p.detail), "ageMinutes": minutes}
    if p.rule == "instance_stalled":
        return {"ageMinutes": minutes}
    if p.rule == "webhook_delivery_failed":
        return {"count": _int_or_none(p.detail), "ageMinutes": minutes, "jobId": p.job_id}
    raise KeyError(p.rule)


def problem_fields(p: Problem, now: datetime) -> dict[str, Any]:
    """One problem as the REST item and ``flowledger health --json`` show it
    (snake_case keys; the API's model and the CLI camelize them)."""
    message, suggestion = describe(p, now)
    return {
        "rule": p.rule,
        "level": p.level,
        "instance_id": p.instance_id,
        "task_id": p.task_id,
        "node_key": p.node_key,
        "job_id": p.job_id,
        "since": p.since,
        "message": message,
        "suggestion": suggestion,
        "message_params": message_params(p, now),
        "recovery_action": recovery_action(p),
        "repair": repair(p),
    }
