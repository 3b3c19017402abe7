"""Consistency conclusions and the verdict of one instance (SPEC O-12), for
the instance diagnostics document: one evaluation of the instance from which
the drawer's conclusions and verdict derive, and which agrees with the
health inspection (O-16). Read-only.

The evaluation is the health inspection itself, filtered by the instance:
every rule of :mod:`flowledger.ops.health.rules` run at the drawer's
threshold (:data:`DEFAULT_THRESHOLD`, 10 min — any threshold the
inspection accepts), de-duplicated as the inspection does
(:func:`~flowledger.ops.health.inspection.one_per_task`), so every problem
the inspection reports for the instance at that threshold is a conclusion
here with the same rule (its ``healthRule``), level and repair
(:func:`~flowledger.ops.health.messages.repair`), and nothing more is
reported under a health rule than the inspection reports. Five inspection
rules keep the names O-12 gives them (``token_task_mismatch`` is
``task_without_token``, ``workflow_event_outbox_failed`` / ``_pending`` are
``event_dispatch_failed`` / ``_pending``; ``external_dispatch_failed`` and
``trigger_execution_failed`` are the same); the others are named by their
inspection rule, among them ``webhook_delivery_failed`` (a dead or
``external_outcome_unconfirmed`` webhook delivery of the instance's events:
an event-dispatch failure, repaired by a replay).

Then the O-12 checks the inspection does not name, each a conclusion with
``healthRule`` null: ``running_without_active_task`` critical,
``running_without_active_token`` critical, ``token_without_task`` warning
(parked join tokens excluded), ``waiting_task_unwakeable`` critical, and
``task_without_token`` critical for a task younger than the threshold (O-12
names it at any age; repair ``force_jump``).

The verdict is the most important conclusion — critical first, then in the
order of :data:`VERDICT_ORDER` — with its repair; only with no conclusion at
all does it say what the instance waits for ("nothing is wrong: waiting for
alice since 3 h"), with ``remind`` when that human task is overdue or older
than a day. So the verdict never says nothing is wrong while a rule fires.
A running instance with no problem gives no conclusion; an ended instance
is checked by the rules that look at ended instances (its events and their
webhook deliveries).

Every conclusion carries ``messageParams`` and the verdict a ``code`` and
``messageParams``: the values their English ``message`` is made of (see
:mod:`flowledger.ops.diagnostics.consistency_messages`, which builds the texts from
them), so a client can word them in its own language.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from functools import lru_cache
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.diagnostics import consistency_checks as checks
from flowledger.ops.diagnostics.consistency_messages import (
    conclusion_message,
    healthy_verdict,
    problem_verdict,
)
from flowledger.ops.health import inspection, rules
from flowledger.ops.health import rule_queries as queries
from flowledger.ops.health.messages import age_minutes
from flowledger.ops.health.messages import message_params as health_params
from flowledger.ops.health.messages import repair as health_repair
from flowledger.states import (
    EXTERNAL_OUTCOME_UNCONFIRMED,
    InstanceStatus,
    TaskStatus,
    TokenState,
)

CRITICAL, WARNING = rules.CRITICAL, rules.WARNING
DEFAULT_THRESHOLD = timedelta(minutes=inspection.MIN_THRESHOLD_MINUTES)
REMIND_AFTER = timedelta(days=1)

#: the conclusion an inspection rule is in the drawer, where O-12 names it
O12_NAMES = {
    "token_task_mismatch": "task_without_token",
    "workflow_event_outbox_failed": "event_dispatch_failed",
    "workflow_event_outbox_pending": "event_dispatch_pending",
}

VERDICT_ORDER = (
    "task_without_token",
    "trigger_execution_failed",
    "external_dispatch_failed",
    "delay_missing_wake_job",
    "delay_overdue",
    "trigger_waiting_no_execution",
    "waiting_task_unwakeable",
    "running_without_active_token",
    "running_without_active_task",
    "instance_stalled",
    "event_dispatch_failed",
    "webhook_delivery_failed",
    "task_timeout_overdue",
    "external_dispatch_pending",
    "subprocess_waiting",
    "token_without_task",
    "waiting_task_stuck",
    "event_dispatch_pending",
)

_RECOVERY_BY_KIND = {
    "delay": "delay-wake",
    "subprocess": "subprocess",
    "trigger": "trigger-dispatch",
    "external_approval": "external-dispatch",
}


@dataclass(frozen=True)
class Evidence:
    task_ids: list[int] = field(default_factory=list)
    token_ids: list[int] = field(default_factory=list)
    job_ids: list[int] = field(default_factory=list)

    def to_public(self) -> dict[str, Any]:
        return {"taskIds": self.task_ids, "tokenIds": self.token_ids, "jobIds": self.job_ids}


@dataclass(frozen=True)
class Conclusion:
    rule: str
    level: str
    message_params: dict[str, Any]
    evidence: Evidence
    repair: dict[str, Any] | None
    #: the health inspection rule that reports the same problem (O-16), or
    #: None for an O-12 check the inspection does not name
    health_rule: str | None = None

    @property
    def message(self) -> str:
        return conclusion_message(self.rule, self.message_params)

    def to_public(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "level": self.level,
            "message": self.message,
            "messageParams": self.message_params,
            "evidence": self.evidence.to_public(),
            "repair": self.repair,
            "healthRule": self.health_rule,
        }


@dataclass(frozen=True)
class Verdict:
    """``code``: the rule of the conclusion it names, else one of
    ``consistency_messages.HEALTHY_CODES``; ``message_params`` that
    conclusion's (or the healthy state's), the repair's in ``params``."""

    code: str
    message: str
    message_params: dict[str, Any]
    action: str | None
    params: dict[str, Any]

    @classmethod
    def healthy(
        cls,
        code: str,
        message_params: dict[str, Any] | None = None,
        action: str | None = None,
        params: dict[str, Any] | None = None,
    ) -> Verdict:
        values, repair = message_params or {}, params or {}
        message = healthy_verdict(code, values, action, repair)
        return cls(code, message, values, action, repair)

    def to_public(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "message": self.message,
            "messageParams": self.message_params,
            "action": self.action,
            "params": self.params,
        }


@dataclass(frozen=True)
class InstanceFindings:
    conclusions: list[Conclusion]
    verdict: Verdict

    def to_public(self) -> dict[str, Any]:
        return {
            "conclusions": [c.to_public() for c in self.conclusions],
            "verdict": self.verdict.to_public(),
        }


def _ints(values: Any) -> list[int]:
    return sorted({int(v) for v in values if v is not None})


async def _rows(conn: AsyncConnection, query: Any, values: Any = None) -> list[Any]:
    return list(await conn.execute(query, values))


Check = Callable[[rules.RuleParams], Any]


@lru_cache(maxsize=16)
def _one_instance(build: Check) -> Any:
    """``build``'s statement for one instance with bound parameters (the
    values: ``RuleParams.bind_values``), built once: building one costs
    more than running it for one instance."""
    return build(_ONE_INSTANCE)


_ONE_INSTANCE = rules.RuleParams(
    now=datetime(1970, 1, 1, tzinfo=UTC), threshold=timedelta(0), instance_id=0
).shape()


def _force_jump(node_key: str | None) -> dict[str, Any] | None:
    return None if node_key is None else {"action": "force_jump", "params": {"target": node_key}}


GATEWAYS = frozenset({"exclusive", "inclusive"})


async def _move_on_from(
    conn: AsyncConnection, instance_id: int, node_key: str | None
) -> dict[str, Any] | None:
    """The force jump that moves a stalled flow on from ``node_key``: back
    onto that node, unless it is a gateway — re-entering a gateway that
    matched no branch stalls again, so the operator picks one of its
    branches (``target`` None, the branches as ``candidates``)."""
    if node_key is None:
        return None
    snapshot = (
        await conn.execute(select(instances.c.snapshot).where(instances.c.id == instance_id))
    ).scalar_one_or_none() or {}
    kinds = {n.get("key"): n.get("type") for n in snapshot.get("nodes", [])}
    if kinds.get(node_key) not in GATEWAYS:
        return _force_jump(node_key)
    branches = [e.get("to") for e in snapshot.get("edges", []) if e.get("from") == node_key]
    return {"action": "force_jump", "params": {"target": None, "candidates": branches}}


async def _open_tokens(conn: AsyncConnection, instance_id: int) -> list[Any]:
    query = (
        select(tokens.c.id, tokens.c.node_key, tokens.c.state, tokens.c.created_at)
        .where(tokens.c.instance_id == instance_id)
        .order_by(tokens.c.id.desc())
    )
    return await _rows(conn, query)


def _o12_params(rule: str, p: inspection.Problem, now: datetime) -> dict[str, Any]:
    """A conclusion's params: O-12's for the rules it names, else the
    inspection item's."""
    if rule == "task_without_token":
        return {"taskId": p.task_id, "nodeKey": p.node_key}
    if rule in ("external_dispatch_failed", "trigger_execution_failed"):
        return {
            "nodeKey": p.node_key,
            "jobId": p.job_id,
            "errorCode": p.detail,
            "outcomeUnconfirmed": p.detail == EXTERNAL_OUTCOME_UNCONFIRMED,
        }
    if rule in ("event_dispatch_failed", "event_dispatch_pending"):
        return {"count": int(p.detail or 0), "ageMinutes": age_minutes(p.since, now)}
    return health_params(p, now)


def from_problem(p: inspection.Problem, now: datetime) -> Conclusion:
    """The drawer's conclusion of one health inspection problem."""
    rule = O12_NAMES.get(p.rule, p.rule)
    return Conclusion(
        rule,
        p.level,
        _o12_params(rule, p, now),
        Evidence(task_ids=_ints([p.task_id]), job_ids=_ints([p.job_id])),
        health_repair(p),
        p.rule,
    )


async def _checks(
    conn: AsyncConnection, instance_id: int, now: datetime, reported: set[int]
) -> list[Conclusion]:
    """The O-12 checks the inspection does not name (``reported``: the
    tasks the inspection reports as ``token_task_mismatch``)."""
    values = rules.RuleParams(
        now=now, threshold=timedelta(0), instance_id=instance_id
    ).bind_values()
    out: list[Conclusion] = []
    all_tokens = await _open_tokens(conn, instance_id)
    # the node the flow last stood at: an active token, else the newest one
    active = [t for t in all_tokens if t.state == TokenState.ACTIVE.value]
    last_node = (active or all_tokens or [None])[0]
    last_node_key = None if last_node is None else last_node.node_key

    if await _rows(conn, _one_instance(checks.running_without_active_task), values):
        out.append(
            Conclusion(
                "running_without_active_task",
                CRITICAL,
                {},
                Evidence(token_ids=_ints(t.id for t in active)),
                await _move_on_from(conn, instance_id, last_node_key),
            )
        )
    if await _rows(conn, _one_instance(checks.running_without_active_token), values):
        parked = [t.id for t in all_tokens if t.state == TokenState.PARKED.value]
        out.append(
            Conclusion(
                "running_without_active_token",
                CRITICAL,
                {},
                Evidence(token_ids=_ints(parked)),
                _force_jump(last_node_key),
            )
        )
    for row in await _rows(conn, _one_instance(queries.token_task_mismatch), values):
        if int(row.task_id) in reported:
            continue
        out.append(
            Conclusion(
                "task_without_token",
                CRITICAL,
                {"taskId": int(row.task_id), "nodeKey": row.node_key},
                Evidence(task_ids=[int(row.task_id)]),
                _force_jump(row.node_key),
            )
        )
    for row in await _rows(conn, _one_instance(checks.tokens_without_task), values):
        out.append(
            Conclusion(
                "token_without_task",
                WARNING,
                {"tokenId": int(row.task_id), "nodeKey": row.node_key},
                Evidence(token_ids=[int(row.task_id)]),
                await _move_on_from(conn, instance_id, row.node_key),
            )
        )
    unwakeable = await _rows(conn, _one_instance(checks.unwakeable_waiting_tasks), values)
    if unwakeable:
        first = unwakeable[0]
        recovery = _RECOVERY_BY_KIND.get(first.detail or "")
        repair = (
            {"action": "recovery", "params": {"action": recovery, "jobId": None}}
            if recovery
            else _force_jump(first.node_key)
        )
        out.append(
            Conclusion(
                "waiting_task_unwakeable",
                CRITICAL,
                {"nodeKeys": sorted({r.node_key for r in unwakeable})},
                Evidence(task_ids=_ints(r.task_id for r in unwakeable)),
                repair,
            )
        )
    return out


async def _waiting_for(conn: AsyncConnection, instance: Any, now: datetime) -> Verdict:
    """The verdict of a healthy instance: what it waits for."""
    if instance.status == InstanceStatus.SUSPENDED.value:
        return Verdict.healthy("suspended")
    if instance.status != InstanceStatus.RUNNING.value:
        return Verdict.healthy("ended", {"status": instance.status})
    open_tasks = await _rows(
        conn,
        select(tasks.c.id, tasks.c.kind, tasks.c.assignee, tasks.c.node_key)
        .add_columns(tasks.c.status, tasks.c.created_at, tasks.c.due_at)
        .where(tasks.c.instance_id == instance.id, tasks.c.status.in_(rules.OPEN_TASK))
        .order_by(tasks.c.created_at, tasks.c.id),
    )
    pending = [t for t in open_tasks if t.status == TaskStatus.PENDING.value]
    if pending:
        oldest = pending[0]
        people = {
            "assignees": list(dict.fromkeys(t.assignee for t in pending)),
            "ageMinutes": age_minutes(oldest.created_at, now),
        }
        overdue = oldest.due_at is not None and oldest.due_at <= now
        if oldest.kind in rules.HUMAN_KINDS and (
            overdue or now - oldest.created_at >= REMIND_AFTER
        ):
            return Verdict.healthy(
                "waiting_too_long",
                {**people, "overdue": overdue},
                "remind",
                {"taskId": int(oldest.id), "assignee": oldest.assignee},
            )
        if all(t.kind == "external_approval" for t in pending):
            return Verdict.healthy(
                "waiting_for_external_approval",
                {"nodeKey": oldest.node_key, "ageMinutes": people["ageMinutes"]},
            )
        return Verdict.healthy("waiting_for_people", people)
    if open_tasks:
        first = open_tasks[0]
        due = first.due_at.isoformat() if first.kind == "delay" and first.due_at else None
        return Verdict.healthy(
            "waiting_for_system_task",
            {
                "taskKind": first.kind,
                "nodeKey": first.node_key,
                "dueAt": due,
                "ageMinutes": age_minutes(first.created_at, now),
            },
        )
    live = await _rows(
        conn,
        select(jobs.c.id, jobs.c.type)
        .where(jobs.c.instance_id == instance.id, jobs.c.status.in_(rules.LIVE_JOB))
        .limit(1),
    )
    if live:
        return Verdict.healthy("job_in_flight", {"jobId": int(live[0].id), "jobType": live[0].type})
    return Verdict.healthy("nothing_wrong")


def _rank(c: Conclusion) -> tuple[bool, int]:
    """Critical first, then in :data:`VERDICT_ORDER`."""
    return c.level != CRITICAL, VERDICT_ORDER.index(c.rule)


def _verdict(ranked: list[Conclusion]) -> Verdict | None:
    if not ranked:
        return None
    top = ranked[0]
    repair = top.repair or {"action": None, "params": {}}
    action = repair["action"]
    params = dict(repair["params"])
    message = problem_verdict(top.message, action, params)
    return Verdict(top.rule, message, top.message_params, action, params)


async def instance_findings(
    conn: AsyncConnection,
    instance_id: int,
    *,
    now: datetime,
    threshold: timedelta = DEFAULT_THRESHOLD,
) -> InstanceFindings:
    """The conclusions and the verdict of ``instance_id`` at ``now``, the
    inspection's rules run at ``threshold``. The caller has checked the
    instance exists in the caller's tenants. JIT is off from the
    inspection's rules on (``inspection.run_rules``), for the checks after
    them too."""
    instance = (
        await conn.execute(
            select(instances.c.id, instances.c.status).where(instances.c.id == instance_id)
        )
    ).first()
    if instance is None:
        return InstanceFindings([], Verdict.healthy("no_such_instance"))
    problems = await inspection.inspect(conn, now=now, threshold=threshold, instance_id=instance_id)
    conclusions = [from_problem(p, now) for p in problems]
    if instance.status == InstanceStatus.RUNNING.value:
        reported = {p.task_id for p in problems if p.rule == "token_task_mismatch" and p.task_id}
        conclusions += await _checks(conn, instance_id, now, reported)
    conclusions.sort(key=_rank)  # stable: one rule's conclusions keep their order
    verdict = _verdict(conclusions) or await _waiting_for(conn, instance, now)
    return InstanceFindings(conclusions, verdict)
