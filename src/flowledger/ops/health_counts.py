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
instance, task, job), then de-duplicates exactly as
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

from sqlalchemy import BigInteger, Integer, cast, func, literal, or_, select, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.health_sql import without_jit
from flowledger.ops.health_inspection import DEFAULT_THRESHOLD_MINUTES
from flowledger.ops.health_rules import LEVELS, RULES, RULES_BY_CODE, RuleParams

_BY_PRIORITY = {rule.priority: rule for rule in RULES}
_JOB = [rule.priority for rule in RULES if rule.group == "job"]
_INSTANCE = [rule.priority for rule in RULES if rule.group == "instance"]
_STALLED = RULES_BY_CODE["instance_stalled"].priority


def counting_statement(params: RuleParams) -> Any:
    """``SELECT priority, count`` of the de-duplicated problems per rule."""
    counting = replace(params, counting=True)
    parts = []
    for rule in RULES:
        rows = rule.build(counting).subquery(f"r{rule.priority}")
        parts.append(
            select(
                literal(rule.priority, Integer).label("prio"),
                cast(rows.c.instance_id, BigInteger).label("instance_id"),
                cast(rows.c.task_id, BigInteger).label("task_id"),
                cast(rows.c.job_id, BigInteger).label("job_id"),
            )
        )
    found = union_all(*parts).cte("found")
    other = found.alias("other")
    with_task_problem = found.c.instance_id.in_(
        select(other.c.instance_id).where(
            other.c.prio.notin_(_INSTANCE), other.c.instance_id.isnot(None)
        )
    )
    best = union_all(
        select(func.min(found.c.prio).label("prio"))
        .where(found.c.task_id.isnot(None))
        .group_by(found.c.task_id),
        select(func.min(found.c.prio))
        .where(found.c.task_id.is_(None), found.c.prio.in_(_JOB))
        .group_by(found.c.job_id),
        select(found.c.prio)
        .where(
            found.c.task_id.is_(None),
            found.c.prio.in_(_INSTANCE),
            or_(found.c.prio != _STALLED, ~with_task_problem),
        )
        .group_by(found.c.prio, found.c.instance_id),
    ).subquery("best")
    return select(best.c.prio, func.count().label("n")).group_by(best.c.prio)


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
