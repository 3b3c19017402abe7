"""Deadlines of human tasks (issue 31 item 4, SPEC E-5): the due time and
the escalation chain's first job.

A node's ``deadline`` gives each of its tasks a due time — ``due`` after
the task's creation, or the instant the form field ``dueField`` holds (an
ISO date-time; a date alone is midnight UTC; no value or a bad one: no due
time, said in a ``deadline_unresolved`` engine trace row) — and an
escalation chain run by ``task_timeout`` jobs, one at a time: the first is
due at the due time (step 0: the task is overdue), each step's job
enqueues the next at ``due + after`` (keyed ``deadline:<task>:<step>``).
The steps themselves are :mod:`flowledger.engine.escalation`.

Also owns :func:`escalation_targets_exist`, the deploy-time check that a
chain's named users and roles exist in the tenant, and the read side's
words: :func:`task_flags` (due soon: due within :data:`DUE_SOON`; overdue:
due time passed, task still pending) and :data:`DEADLINE_STATES`."""

from __future__ import annotations

from datetime import UTC, date, datetime, time, timedelta

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import users
from flowledger.definitions.deadline_rules import parse_target
from flowledger.definitions.model import Deadline, Node, ProcessDefinition
from flowledger.definitions.problems import DefinitionError, Problem
from flowledger.definitions.rules import until_instant
from flowledger.engine.step import Step


def due_time(step: Step, deadline: Deadline) -> datetime | None:
    """The due time of a task created now, or None when ``dueField`` holds
    no usable instant."""
    if deadline.due is not None:
        return step.now + deadline.due
    assert deadline.due_field is not None
    value = step.form.get(deadline.due_field)
    if isinstance(value, str) and value:
        try:
            if len(value) == 10:  # a date alone: its midnight, UTC
                return datetime.combine(date.fromisoformat(value), time(), UTC)
            return until_instant(value, UTC)
        except ValueError:
            return None
    return None


def _job_key(task_id: int, index: int) -> str:
    return f"deadline:{task_id}:{index}"


async def schedule(step: Step, node: Node, task_id: int, due: datetime | None) -> None:
    """Enqueue the chain's first job of a new task of ``node`` at its
    :func:`due_time` (or say why it has none); called by the node's entry."""
    assert node.deadline is not None
    if due is None:
        await step.trace(
            "deadline_unresolved",
            node_key=node.key,
            task_id=task_id,
            detail={"dueField": node.deadline.due_field},
        )
        return
    await enqueue_step(step, node, task_id, 0, due)


async def enqueue_step(step: Step, node: Node, task_id: int, index: int, run_at: datetime) -> None:
    await step.enqueue(
        "task_timeout",
        task_id=task_id,
        node_key=node.key,
        run_at=run_at,
        payload={"taskId": task_id, "deadlineStep": index},
        idempotency_key=_job_key(task_id, index),
    )


def sees(tenants: list[str] | None, tenant: str) -> bool:
    return "*" in (tenants or []) or tenant in (tenants or [])


async def escalation_targets_exist(
    conn: AsyncConnection, defn: ProcessDefinition, tenant: str
) -> None:
    """Every ``user:<id>`` a chain names is a user of the tenant and every
    ``role:<name>`` is held by one (``escalation_target_unknown``, naming the
    step's ``to``). One query, only when a chain names one."""
    wanted: list[tuple[Node, int, str, str]] = []
    for node in defn.nodes:
        for i, esc in enumerate(node.deadline.escalation if node.deadline else []):
            parsed = parse_target(esc.to) if esc.to else None
            if parsed is not None and parsed[0] != "manager":
                wanted.append((node, i, *parsed))
    if not wanted:
        return
    rows = (await conn.execute(select(users.c.id, users.c.roles, users.c.tenants))).all()
    seen = [r for r in rows if sees(r.tenants, tenant)]
    known_users = {r.id for r in seen}
    known_roles = {role for r in seen for role in (r.roles or [])}
    problems = [
        Problem(
            "escalation_target_unknown",
            f"node {node.key!r}: deadline.escalation[{i}].to names {kind} {name!r}, "
            f"which {'is not a user' if kind == 'user' else 'no user holds'} in tenant {tenant!r}",
            node=node.key,
            field=f"deadline.escalation[{i}].to",
        )
        for node, i, kind, name in wanted
        if name not in (known_users if kind == "user" else known_roles)
    ]
    if problems:
        raise DefinitionError(problems)


# ----------------------------------------------------------------- read side

#: a pending task is "due soon" when its due time is at most this far ahead
DUE_SOON = timedelta(hours=4)
#: the values of the instances list's ``deadline`` filter and of a row's state
DEADLINE_STATES = ("overdue", "due_soon", "escalated")


def _utc(at: datetime) -> datetime:
    return at if at.tzinfo else at.replace(tzinfo=UTC)


def task_flags(
    status: str, due_at: datetime | None, now: datetime, window: timedelta = DUE_SOON
) -> tuple[bool, bool]:
    """(due soon, overdue) of a task: only a pending task with a due time is
    either; overdue once its due time has come."""
    if status != "pending" or due_at is None:
        return False, False
    due = _utc(due_at)
    return (now < due <= now + window, due <= now)
