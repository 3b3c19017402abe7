"""The health inspection's counts without its rows (SPEC O-16, O-22): the
``byRule`` / ``byLevel`` summary that
:func:`~flowledger.ops.health_inspection.summarize` gives for
:func:`~flowledger.ops.health_inspection.inspect`'s problems, computed by
one statement that returns one row per rule found, so the health score (the
alert evaluator's ``engine_health_score``, every minute) costs what the
database's counting costs, not building and sorting tens of thousands of
problems. Read-only.

The statement runs every rule's own builder of
:mod:`flowledger.ops.health_rules` (``RuleParams.counting``: the
running-instance check as a join) as one ``UNION ALL`` of (rule priority,
de-duplication key, instance), streamed into one ``GROUP BY`` of the key,
which de-duplicates exactly as
:func:`~flowledger.ops.health_inspection.one_per_task` does:

- a problem with a task: one per task, the rule of lowest priority wins;
- a job problem without a task: one per job (lowest priority);
- an instance-level problem (stalled, outbox): one per rule and instance,
  and ``instance_stalled`` is dropped for an instance that has any task or
  job problem;

and counts what is left by rule.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import BigInteger, Integer, case, cast, func, literal, or_, select, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.health_sql import without_jit
from flowledger.ops.health_inspection import DEFAULT_THRESHOLD_MINUTES
from flowledger.ops.health_rules import LEVELS, RULES, RULES_BY_CODE, Rule, RuleParams

_BY_PRIORITY = {rule.priority: rule for rule in RULES}
_STALLED = RULES_BY_CODE["instance_stalled"].priority


def _key(rule: Rule, rows: Any) -> tuple[Any, Any]:
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
    """``SELECT priority, count`` of the de-duplicated problems per rule:
    the rows of every rule (streamed, never stored), grouped by their key
    (the lowest priority wins), then counted by priority."""
    counting = replace(params, counting=True)
    parts = []
    for rule in RULES:
        rows = rule.build(counting).subquery(f"r{rule.priority}")
        kind, key = _key(rule, rows)
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
            func.min(found.c.instance_id).label("instance_id"),
        )
        .group_by(found.c.kind, found.c.key)
        .cte("best")
    )
    other = best.alias("other")
    with_task_problem = best.c.instance_id.in_(
        select(other.c.instance_id).where(other.c.kind < 2, other.c.instance_id.isnot(None))
    )
    return (
        select(best.c.prio, func.count().label("n"))
        .where(or_(best.c.prio != _STALLED, ~with_task_problem))
        .group_by(best.c.prio)
    )


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
    for prio, count in await conn.execute(counting_statement(params)):
        rule = _BY_PRIORITY[int(prio)]
        by_rule[rule.code] += int(count)
        by_level[rule.level] += int(count)
    return {"byRule": by_rule, "byLevel": by_level}
