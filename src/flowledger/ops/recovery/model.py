"""The vocabulary of targeted recovery (SPEC O-18): the actions and the job
types each owns, the task status a node's job needs, the limits, the
filter (:class:`RecoveryFilter`) and its checks, and the plan
(:class:`RecoveryPlan` of :class:`PlanItem`). Reading the plan is
:mod:`flowledger.ops.recovery.plan`; the run,
:mod:`flowledger.ops.recovery.actions`.

Each action owns job types and never looks at others:

=====================  ===========================================
``event-dispatch``     event_dispatch (+ the event outbox)
``trigger-dispatch``   trigger_dispatch
``delay-wake``         delay_wake
``task-timeout``       task_timeout
``subprocess``         subprocess_spawn, subprocess_join
``webhook-delivery``   webhook_delivery
``external-dispatch``  external_dispatch
=====================  ===========================================
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timedelta
from typing import Any

from flowledger.errors import FlowledgerError, NotFoundError

ACTIONS: dict[str, tuple[str, ...]] = {
    "event-dispatch": ("event_dispatch",),
    "trigger-dispatch": ("trigger_dispatch",),
    "delay-wake": ("delay_wake",),
    "task-timeout": ("task_timeout",),
    "subprocess": ("subprocess_spawn", "subprocess_join"),
    "webhook-delivery": ("webhook_delivery",),
    "external-dispatch": ("external_dispatch",),
}
# the task status a job of each node type needs to still have work to do
TASK_STATUS: dict[str, str] = {
    "delay_wake": "waiting",
    "task_timeout": "pending",
    "subprocess_spawn": "waiting",
    "subprocess_join": "waiting",
    "trigger_dispatch": "waiting",
    "external_dispatch": "pending",
}
OVERDUE_GRACE = timedelta(seconds=60)
DEFAULT_LIMIT = 100
MAX_LIMIT = 500
PREVIEW_SAMPLES = 20

RETRY, WAKE, RECLAIM, RECREATE = "retry", "wake", "reclaim", "recreate"
NEEDS_PERSON = "needs_person"


class UnknownRecoveryAction(NotFoundError):
    code = "unknown_recovery_action"


@dataclass(frozen=True)
class RecoveryFilter:
    instance_id: int | None = None
    min_age_minutes: int = 0
    limit: int = DEFAULT_LIMIT
    tenants: tuple[str, ...] | None = None  # None: every tenant


@dataclass(frozen=True)
class PlanItem:
    """One thing a recovery run would touch, and how."""

    action: str  # retry | wake | reclaim | recreate | needs_person
    target: str  # job | task | outbox
    reason: str
    job_type: str | None = None
    job_id: int | None = None
    task_id: int | None = None
    instance_id: int | None = None
    outbox_id: int | None = None
    node_key: str | None = None
    status: str | None = None  # the job's, task's or outbox row's status
    since: datetime | None = None
    child_instance_id: int | None = None  # subprocess_join recreate
    canceled_job_id: int | None = None  # recreate by retrying this canceled job

    def public(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items() if v is not None}


@dataclass(frozen=True)
class RecoveryPlan:
    action: str
    items: list[PlanItem]

    @property
    def by_action(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for item in self.items:
            counts[item.action] = counts.get(item.action, 0) + 1
        return counts


def job_types(action: str) -> tuple[str, ...]:
    """The job types ``action`` owns; :class:`UnknownRecoveryAction` (404)
    for an action that does not exist."""
    try:
        return ACTIONS[action]
    except KeyError:
        raise UnknownRecoveryAction(
            f"unknown recovery action {action!r}; one of {', '.join(ACTIONS)}",
            field="action",
            actions=list(ACTIONS),
        ) from None


def check_filter(flt: RecoveryFilter) -> None:
    if not 1 <= flt.limit <= MAX_LIMIT:
        raise FlowledgerError(f"limit must be 1 to {MAX_LIMIT}", field="limit")
    if flt.min_age_minutes < 0:
        raise FlowledgerError("minAgeMinutes must not be negative", field="minAgeMinutes")


__all__ = [
    "ACTIONS",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "NEEDS_PERSON",
    "OVERDUE_GRACE",
    "PREVIEW_SAMPLES",
    "RECLAIM",
    "RECREATE",
    "RETRY",
    "TASK_STATUS",
    "WAKE",
    "PlanItem",
    "RecoveryFilter",
    "RecoveryPlan",
    "UnknownRecoveryAction",
    "check_filter",
    "job_types",
]
