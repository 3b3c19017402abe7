"""The health inspection's counts without its rows (SPEC O-16, O-22): the
``byRule`` / ``byLevel`` summary that
:func:`~flowledger.ops.health.inspection.summarize` gives for
:func:`~flowledger.ops.health.inspection.inspect`'s problems, computed by
one statement that returns one row per rule found, so the health score (the
alert evaluator's ``engine_health_score``, every minute) costs what the
database's counting costs, not building and sorting tens of thousands of
problems. Read-only.

The statement runs the rules of :mod:`flowledger.ops.health.rules`
(``RuleParams.counting``: the running-instance check as a join) as one
``UNION ALL`` of (rule priority, de-duplication key, instance), streamed
into one ``GROUP BY`` of the key, which de-duplicates exactly as
:func:`~flowledger.ops.health.inspection.one_per_task` does. The rules that
report open tasks (those with a ``when``) are one part of it,
:func:`~flowledger.ops.health.rules.open_task_priorities`: one pass over the
open tasks giving each task the first of those rules that reports it (what
the de-duplication would keep of their rows anyway); every other rule is its
own builder. The de-duplication:

- a problem with a task: one per task, the rule of lowest priority wins;
- a job problem without a task: one per job (lowest priority);
- an instance-level problem (stalled, outbox): one per rule and instance,
  and ``instance_stalled`` is dropped for an instance that has any task or
  job problem;

and counts what is left by rule. The stalled instances are found first (a
CTE, materialized on PostgreSQL: a few rows), so that the one pass counting
the de-duplicated problems by rule can also name, as a group of its own, a
stalled instance that has a task or job problem (``hidden``): those are
subtracted from ``instance_stalled`` — no second pass over the problems.

The statement is built once per shape (which of tenants / definition key
are given, :meth:`~flowledger.ops.health.rules.RuleParams.shape`) with bind
parameters, and executed with the values of each call: building it costs
tens of milliseconds of Python, more than some of its rules cost to run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    Integer,
    and_,
    case,
    cast,
    func,
    literal,
    null,
    or_,
    select,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.health_sql import materialized_cte, without_jit
from flowledger.ops.health.inspection import DEFAULT_THRESHOLD_MINUTES
from flowledger.ops.health.rules import (
    LEVELS,
    RULES,
    RULES_BY_CODE,
    Rule,
    RuleParams,
    open_task_priorities,
)

_BY_PRIORITY = {rule.priority: rule for rule in RULES}
_STALLED = RULES_BY_CODE["instance_stalled"].priority


def dedup_key(rule: Rule, rows: Any) -> tuple[Any, Any]:
    """The de-duplication key of a rule's row: (kind, id) — (0, task) for a
    problem with a task, (1, job) for a job problem without one, (2 +
    priority, instance) for an instance-level problem."""
    task_id = cast(rows.c.task_id, BigInteger)
    if rule.group == "instance":
        return literal(2 + rule.priority, Integer), cast(rows.c.instance_id, BigInteger)
    if rule.group == "job":
        kind = case((task_id.is_(None), literal(1, Integer)), else_=literal(0, Integer))
        return kind, func.coalesce(task_id, cast(rows.c.job_id, BigInteger))
    return literal(0, Integer), task_id


def counting_statement(params: RuleParams) -> Any:
    """``SELECT prio, hidden, n``: the de-duplicated problems counted by
    rule priority (sum ``n`` by ``prio``), and the stalled instances whose
    ``instance_stalled`` a task or job problem hides (the distinct non-NULL
    ``hidden``).

    The open tasks' rows (:func:`open_task_priorities`, each task once:
    the bulk of the rows) are only counted by priority. The rows of the
    other rules (job and instance problems: few) are grouped by their key
    (the lowest priority wins), and a group whose key is a task also looks
    that task up in the open tasks' priorities (one scalar subquery by
    primary key, only for such groups): when the
    task is counted there too, its count moves to the lower priority of the
    two (``-1`` there, ``+1`` here) — the same result as grouping all rows,
    without grouping tens of thousands of open tasks. An open task's own
    instance is never stalled (stalled means no open task), so only the
    groups of the other rules can hide a stalled instance."""
    counting = replace(params, counting=True)
    stalled = materialized_cte(
        RULES_BY_CODE["instance_stalled"].build(counting), "stalled_instances"
    )
    open_tasks = open_task_priorities(counting).subquery("open_tasks")
    parts = []
    for rule in RULES:
        if rule.when is not None:  # in open_tasks
            continue
        rows = (
            stalled
            if rule.priority == _STALLED
            else rule.build(counting).subquery(f"r{rule.priority}")
        )
        kind, key = dedup_key(rule, rows)
        parts.append(
            select(
                literal(rule.priority, Integer).label("prio"),
                kind.label("kind"),
                key.label("key"),
                cast(rows.c.instance_id, BigInteger).label("instance_id"),
            )
        )
    found = union_all(*parts).subquery("found")
    best = (
        select(
            func.min(found.c.prio).label("prio"),
            found.c.kind,
            found.c.key,
            func.min(found.c.instance_id).label("instance_id"),
        )
        .group_by(found.c.kind, found.c.key)
        .subquery("best")
    )
    as_open = open_task_priorities(counting).where(tasks.c.id == best.c.key)
    open_prio = as_open.with_only_columns(as_open.selected_columns.prio).scalar_subquery()
    groups = select(
        best.c.prio,
        best.c.kind,
        best.c.key,
        best.c.instance_id,
        case((best.c.kind == 0, open_prio), else_=null()).label("open_prio"),
    ).cte("other_problems")
    first = or_(groups.c.open_prio.is_(None), groups.c.prio < groups.c.open_prio)
    prio = case((first, groups.c.prio), else_=groups.c.open_prio)
    # the group's instance is the lower of its own and, when the task is
    # counted among the open tasks too, the task's; the latter is never
    # stalled (it has an open task), so a stalled instance of the group is
    # hidden unless the task's instance is lower (looked up only then)
    task_instance = select(tasks.c.instance_id).where(tasks.c.id == groups.c.key).scalar_subquery()
    lowest = or_(groups.c.open_prio.is_(None), groups.c.instance_id < task_instance)
    stalled_here = and_(
        groups.c.kind < 2,
        groups.c.instance_id.in_(select(cast(stalled.c.instance_id, BigInteger))),
    )
    hidden = case((and_(stalled_here, lowest), groups.c.instance_id), else_=null())
    no_instance = cast(null(), BigInteger)
    counted = union_all(
        select(open_tasks.c.prio, no_instance.label("hidden"), func.count().label("n"))
        .where(open_tasks.c.prio.isnot(None))
        .group_by(open_tasks.c.prio),
        select(prio, cast(hidden, BigInteger), literal(1, BigInteger)),
        select(groups.c.open_prio, no_instance, literal(-1, BigInteger)).where(
            groups.c.open_prio.isnot(None)
        ),
    ).subquery("counted")
    return select(counted.c.prio, counted.c.hidden, func.sum(counted.c.n).label("n")).group_by(
        counted.c.prio, counted.c.hidden
    )


@lru_cache(maxsize=16)
def _built(shape: RuleParams) -> Any:
    """The counting statement of ``shape`` (bound parameters), built once: a
    pure memo of an immutable statement per shape (at most 2 x 2 x 2)."""
    return counting_statement(shape)


async def problem_counts(
    conn: AsyncConnection,
    *,
    now: datetime,
    threshold: timedelta = timedelta(minutes=DEFAULT_THRESHOLD_MINUTES),
    tenants: Sequence[str] | None = None,
    definition_key: str | None = None,
) -> dict[str, Any]:
    """``{"byRule": …, "byLevel": …}`` equal to ``summarize(inspect(…))``
    for the same arguments, in ``conn``'s snapshot."""
    params = RuleParams(
        now=now, threshold=threshold, tenants=tenants, definition_key=definition_key
    )
    await without_jit(conn)
    by_rule = {rule.code: 0 for rule in RULES}
    by_level = dict.fromkeys(LEVELS, 0)
    hidden: set[int] = set()
    for prio, hides, count in await conn.execute(_built(params.shape()), params.bind_values()):
        rule = _BY_PRIORITY[int(prio)]
        by_rule[rule.code] += int(count)
        by_level[rule.level] += int(count)
        if hides is not None:
            hidden.add(int(hides))
    stalled = RULES_BY_CODE["instance_stalled"]
    by_rule[stalled.code] -= len(hidden)
    by_level[stalled.level] -= len(hidden)
    return {"byRule": by_rule, "byLevel": by_level}
