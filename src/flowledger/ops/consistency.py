"""Consistency conclusions and the verdict of one instance (SPEC O-12), for
the instance diagnostics document. Read-only.

The checks are the shared builders of :mod:`flowledger.ops.health_rule_queries`
run for this one instance (``instance_id`` parameter): the same
``token_task_mismatch``, ``external_dispatch_failed``,
``trigger_execution_failed`` and outbox checks the health inspection runs
(here with no threshold, except the pending-events backlog, which keeps the
inspection's default of 30 min), plus the O-12-only checks (no active task,
no active token, token without task, unwakeable waiting tasks).

Rules and levels (O-12): ``running_without_active_task`` critical,
``running_without_active_token`` critical, ``task_without_token`` critical
(repair ``force_jump``), ``token_without_task`` warning (parked join tokens
excluded), ``waiting_task_unwakeable`` critical, ``external_dispatch_failed``
and ``trigger_execution_failed`` critical (job failed or dead; repair
``job_retry``), ``event_dispatch_failed`` critical / ``event_dispatch_pending``
warning (repair ``recovery`` event-dispatch).

The verdict is the most important conclusion in the order of
:data:`VERDICT_ORDER` with its repair; with no conclusion it says what the
instance waits for ("nothing is wrong: waiting for alice since 3 h"), with
``remind`` when that human task is overdue or older than a day.
A running instance with no problem gives no conclusion at all; an ended
instance is checked for its events only.

Every conclusion carries ``messageParams`` and the verdict a ``code`` and
``messageParams``: the values their English ``message`` is made of (see
:mod:`flowledger.ops.consistency_messages`, which builds the texts from
them), so a client can word them in its own language.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.db.planner import set_local
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops import consistency_checks as checks
from flowledger.ops import health_rule_queries as queries
from flowledger.ops import health_rules as rules
from flowledger.ops.consistency_messages import (
    conclusion_message,
    healthy_verdict,
    problem_verdict,
)
from flowledger.ops.health_messages import age_minutes
from flowledger.states import (
    EXTERNAL_OUTCOME_UNCONFIRMED,
    InstanceStatus,
    TaskStatus,
    TokenState,
)

CRITICAL, WARNING = rules.CRITICAL, rules.WARNING
PENDING_EVENTS_AFTER = timedelta(minutes=30)
REMIND_AFTER = timedelta(days=1)

VERDICT_ORDER = (
    "task_without_token",
    "trigger_execution_failed",
    "external_dispatch_failed",
    "waiting_task_unwakeable",
    "running_without_active_token",
    "running_without_active_task",
    "token_without_task",
    "event_dispatch_failed",
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


async def _rows(conn: AsyncConnection, query: Any) -> list[Any]:
    return list(await conn.execute(query))


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


async def _checks(conn: AsyncConnection, instance_id: int, now: datetime) -> list[Conclusion]:
    now_params = rules.RuleParams(now=now, threshold=timedelta(0), instance_id=instance_id)
    out: list[Conclusion] = []
    all_tokens = await _open_tokens(conn, instance_id)
    # the node the flow last stood at: an active token, else the newest one
    active = [t for t in all_tokens if t.state == TokenState.ACTIVE.value]
    last_node = (active or all_tokens or [None])[0]
    last_node_key = None if last_node is None else last_node.node_key

    if await _rows(conn, checks.running_without_active_task(now_params)):
        out.append(
            Conclusion(
                "running_without_active_task",
                CRITICAL,
                {},
                Evidence(token_ids=_ints(t.id for t in active)),
                await _move_on_from(conn, instance_id, last_node_key),
            )
        )
    if await _rows(conn, checks.running_without_active_token(now_params)):
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
    for row in await _rows(conn, queries.token_task_mismatch(now_params)):
        out.append(
            Conclusion(
                "task_without_token",
                CRITICAL,
                {"taskId": int(row.task_id), "nodeKey": row.node_key},
                Evidence(task_ids=[int(row.task_id)]),
                _force_jump(row.node_key),
            )
        )
    for row in await _rows(conn, checks.tokens_without_task(now_params)):
        out.append(
            Conclusion(
                "token_without_task",
                WARNING,
                {"tokenId": int(row.task_id), "nodeKey": row.node_key},
                Evidence(token_ids=[int(row.task_id)]),
                await _move_on_from(conn, instance_id, row.node_key),
            )
        )
    unwakeable = await _rows(conn, checks.unwakeable_waiting_tasks(now_params))
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
    for code, build in (
        ("external_dispatch_failed", queries.external_dispatch_failed),
        ("trigger_execution_failed", queries.trigger_execution_failed),
    ):
        for row in await _rows(conn, build(now_params)):
            out.append(
                Conclusion(
                    code,
                    CRITICAL,
                    {
                        "nodeKey": row.node_key,
                        "jobId": int(row.job_id),
                        "errorCode": row.detail,
                        "outcomeUnconfirmed": row.detail == EXTERNAL_OUTCOME_UNCONFIRMED,
                    },
                    Evidence(task_ids=_ints([row.task_id]), job_ids=[int(row.job_id)]),
                    {"action": "job_retry", "params": {"jobId": int(row.job_id)}},
                )
            )
    return out


async def _event_checks(conn: AsyncConnection, instance_id: int, now: datetime) -> list[Conclusion]:
    out: list[Conclusion] = []
    for code, level, build, params in (
        (
            "event_dispatch_failed",
            CRITICAL,
            queries.workflow_event_outbox_failed,
            rules.RuleParams(now=now, threshold=timedelta(0), instance_id=instance_id),
        ),
        (
            "event_dispatch_pending",
            WARNING,
            queries.workflow_event_outbox_pending,
            rules.RuleParams(now=now, threshold=PENDING_EVENTS_AFTER, instance_id=instance_id),
        ),
    ):
        for row in await _rows(conn, build(params)):
            out.append(
                Conclusion(
                    code,
                    level,
                    {"count": int(row.detail), "ageMinutes": age_minutes(row.since, now)},
                    Evidence(),
                    {"action": "recovery", "params": {"action": "event-dispatch", "jobId": None}},
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


def _verdict(conclusions: list[Conclusion]) -> Verdict | None:
    ranked = sorted(conclusions, key=lambda c: VERDICT_ORDER.index(c.rule))
    if not ranked:
        return None
    top = ranked[0]
    repair = top.repair or {"action": None, "params": {}}
    action = repair["action"]
    params = dict(repair["params"])
    message = problem_verdict(top.message, action, params)
    return Verdict(top.rule, message, top.message_params, action, params)


async def instance_findings(
    conn: AsyncConnection, instance_id: int, *, now: datetime
) -> InstanceFindings:
    """The conclusions and the verdict of ``instance_id`` at ``now``. The
    caller has checked the instance exists in the caller's tenants."""
    await set_local(conn, jit="off")  # see health_inspection.run_rules
    instance = (
        await conn.execute(
            select(instances.c.id, instances.c.status).where(instances.c.id == instance_id)
        )
    ).first()
    if instance is None:
        return InstanceFindings([], Verdict.healthy("no_such_instance"))
    conclusions: list[Conclusion] = []
    if instance.status == InstanceStatus.RUNNING.value:
        conclusions += await _checks(conn, instance_id, now)
    conclusions += await _event_checks(conn, instance_id, now)
    verdict = _verdict(conclusions) or await _waiting_for(conn, instance, now)
    return InstanceFindings(conclusions, verdict)
