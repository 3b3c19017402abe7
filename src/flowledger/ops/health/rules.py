"""The registry of the health checks (SPEC O-16, O-12): every rule with its
code, level, priority and group, its query builder and, for a rule that
reports open tasks, its conditions (:data:`RULES`, by code
:data:`RULES_BY_CODE`), and :func:`open_task_priorities`, which evaluates
the conditions of all those open-task rules in one pass. Both the
engine-wide health inspection (:mod:`flowledger.ops.health.inspection`)
and one instance's consistency conclusions (:mod:`flowledger.ops.diagnostics.consistency`)
run these same rules. The builders, one per rule, are
:mod:`flowledger.ops.health.rule_queries`; the checks O-12 names and O-16
does not are :mod:`flowledger.ops.diagnostics.consistency_checks`, and the parts every
builder is made of (parameters, scopes, the running-instance check, the row
shape) :mod:`flowledger.ops.health.query`.

The exact condition of each rule is written in ``docs/operations.md`` and in
its builder.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Integer, Select, and_, case, literal, null, select

from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.ops.health.query import (
    BROKEN_JOB,
    COLUMNS,
    DUE_GRACE,
    DUE_JOB,
    HUMAN_KINDS,
    LIVE_JOB,
    OPEN_TASK,
    RuleParams,
    holds,
    scope,
    task_scope,
)
from flowledger.ops.health.rule_queries import (
    TaskRow,
    TaskWhen,
    delay_missing_wake_job,
    delay_missing_wake_job_row,
    delay_missing_wake_job_when,
    delay_overdue,
    external_dispatch_failed,
    external_dispatch_pending,
    external_dispatch_pending_row,
    external_dispatch_pending_when,
    instance_stalled,
    subprocess_waiting,
    subprocess_waiting_row,
    subprocess_waiting_when,
    task_timeout_overdue,
    token_task_mismatch,
    token_task_mismatch_row,
    token_task_mismatch_when,
    trigger_execution_failed,
    trigger_waiting_no_execution,
    trigger_waiting_no_execution_row,
    trigger_waiting_no_execution_when,
    waiting_task_stuck,
    waiting_task_stuck_row,
    waiting_task_stuck_when,
    webhook_delivery_failed,
    workflow_event_outbox_failed,
    workflow_event_outbox_pending,
)

__all__ = [
    "BROKEN_JOB",
    "COLUMNS",
    "CRITICAL",
    "DUE_GRACE",
    "DUE_JOB",
    "HUMAN_KINDS",
    "LEVELS",
    "LIVE_JOB",
    "OPEN_TASK",
    "RULES",
    "RULES_BY_CODE",
    "RULE_CODES",
    "WARNING",
    "Rule",
    "RuleParams",
    "open_task_priorities",
]

CRITICAL = "critical"
WARNING = "warning"

Builder = Callable[[RuleParams], Select[Any]]


@dataclass(frozen=True)
class Rule:
    code: str
    level: str
    #: lower is more important; a task reports only its lowest-priority rule
    priority: int
    #: "missing token" > "job anomaly" > "stuck" (instance- and outbox-level
    #: rules are "instance")
    group: str
    build: Builder
    #: whether the rule measures its condition against the threshold
    uses_threshold: bool
    #: for a rule that reports open tasks (one row per task): its conditions,
    #: which :func:`open_task_priorities` evaluates for all such rules in one
    #: pass over the open tasks (``build`` applies the same conditions)
    when: TaskWhen | None = None
    #: with ``when``: the row's ``job_id`` and ``detail`` for such a task
    #: (:data:`~flowledger.ops.health.rule_queries.TaskRow`)
    row: TaskRow | None = None


RULES: tuple[Rule, ...] = (
    Rule(
        "token_task_mismatch",
        CRITICAL,
        0,
        "token",
        token_task_mismatch,
        True,
        when=token_task_mismatch_when,
        row=token_task_mismatch_row,
    ),
    Rule("external_dispatch_failed", CRITICAL, 1, "job", external_dispatch_failed, False),
    Rule("trigger_execution_failed", CRITICAL, 2, "job", trigger_execution_failed, False),
    Rule(
        "delay_missing_wake_job",
        CRITICAL,
        3,
        "job",
        delay_missing_wake_job,
        False,
        when=delay_missing_wake_job_when,
        row=delay_missing_wake_job_row,
    ),
    Rule("delay_overdue", CRITICAL, 4, "job", delay_overdue, False),
    Rule(
        "trigger_waiting_no_execution",
        CRITICAL,
        5,
        "job",
        trigger_waiting_no_execution,
        True,
        when=trigger_waiting_no_execution_when,
        row=trigger_waiting_no_execution_row,
    ),
    Rule("task_timeout_overdue", WARNING, 6, "job", task_timeout_overdue, False),
    Rule(
        "external_dispatch_pending",
        WARNING,
        7,
        "job",
        external_dispatch_pending,
        True,
        when=external_dispatch_pending_when,
        row=external_dispatch_pending_row,
    ),
    Rule(
        "subprocess_waiting",
        WARNING,
        8,
        "stuck",
        subprocess_waiting,
        True,
        when=subprocess_waiting_when,
        row=subprocess_waiting_row,
    ),
    Rule(
        "waiting_task_stuck",
        WARNING,
        9,
        "stuck",
        waiting_task_stuck,
        True,
        when=waiting_task_stuck_when,
        row=waiting_task_stuck_row,
    ),
    Rule("instance_stalled", CRITICAL, 10, "instance", instance_stalled, False),
    Rule(
        "workflow_event_outbox_failed",
        CRITICAL,
        11,
        "instance",
        workflow_event_outbox_failed,
        False,
    ),
    Rule(
        "workflow_event_outbox_pending",
        WARNING,
        12,
        "instance",
        workflow_event_outbox_pending,
        True,
    ),
    Rule("webhook_delivery_failed", CRITICAL, 13, "instance", webhook_delivery_failed, False),
)
RULES_BY_CODE = {r.code: r for r in RULES}
RULE_CODES = tuple(r.code for r in RULES)
LEVELS = (CRITICAL, WARNING)


def open_task_priorities(p: RuleParams, rules: Sequence[Rule] = RULES) -> Select[Any]:
    """``prio, task_id, instance_id`` of every open task in scope whose
    instance is running and in scope, ``prio`` being the priority of the
    first rule of ``rules`` with a ``when`` (in priority order) that reports
    it, NULL when none does — the rows of all those rules in one pass over
    the open tasks, each task once with the rule that wins it (what the
    de-duplication would keep of the rules' rows). The task's token is one
    outer join (the planner may hash or merge it) instead of one probe per
    task. ``OFFSET 0`` keeps the statement a subquery for the caller, which
    filters on ``prio``: inlined, every condition would be evaluated twice."""
    holder = tokens.alias("holder")
    no_holder = holder.c.id.is_(None)
    branches = [
        (and_(*rule.when(p, no_holder)), literal(rule.priority, Integer))
        for rule in sorted(rules, key=lambda r: r.priority)
        if rule.when is not None
    ]
    return (
        select(
            case(*branches, else_=null()).label("prio"),
            tasks.c.id.label("task_id"),
            tasks.c.instance_id.label("instance_id"),
        )
        .select_from(
            tasks.outerjoin(holder, holds(holder)).join(
                instances, instances.c.id == tasks.c.instance_id
            )
        )
        .where(tasks.c.status.in_(OPEN_TASK), *task_scope(p), *scope(p))
        .offset(0)
    )
