"""One page of the health inspection's problems and the counts of all of
them, read by one statement (SPEC O-16): the same items, in the same
order, with the same keyset, that :func:`~flowledger.ops.health.inspection.page`
takes from :func:`~flowledger.ops.health.inspection.inspect`'s problems,
and the summary :func:`~flowledger.ops.health.inspection.summarize` gives
— without building every problem in Python (tens of thousands on a volume
database). Read-only.

The statement runs the rules of :mod:`flowledger.ops.health.rules`
(``RuleParams.counting``: the running-instance check as a join, since
every candidate is read) and de-duplicates their rows as
:func:`~flowledger.ops.health.inspection.one_per_task` does, the way
:mod:`flowledger.ops.health.counts` counts them:

- the rules that report open tasks (those with a ``when``) are one pass
  over the open tasks, :func:`~flowledger.ops.health.rules.open_task_priorities`,
  each task once with the first of those rules that reports it;
- the job rules' rows (keyed by task or job:
  :func:`~flowledger.ops.health.counts.dedup_key`; few) keep one row per
  key: the lowest priority, then the oldest ``since``, then the lowest job
  id (one task with two overdue timeout jobs); an instance-level rule has
  one row per instance already;
- between the two, a task keeps the rule of lower priority;
- ``instance_stalled`` is dropped for an instance with a task or job
  problem (an open task's instance is never stalled).

What is left (a CTE) is counted by rule, and its rows after the keyset
``after`` in the inspection's order — critical first, then ``since``,
instance, task (absent: 0), priority — filtered by ``rule`` / ``level``,
at most ``limit + 1`` (a top-N sort, not a sort of every problem), are the
page. Only for those rows are an open task's ``job_id`` and ``detail``
read, by its rule's ``row`` (:data:`~flowledger.ops.health.rule_queries.TaskRow`).
The window function and row values it uses exist on both backends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from sqlalchemy import (
    BigInteger,
    Integer,
    String,
    and_,
    bindparam,
    case,
    cast,
    exists,
    func,
    literal,
    null,
    select,
    tuple_,
    union_all,
)
from sqlalchemy.ext.asyncio import AsyncConnection
from sqlalchemy.sql.expression import type_coerce

from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.planner import set_local
from flowledger.db.types import UTCDateTime
from flowledger.ops.health.counts import dedup_key
from flowledger.ops.health.inspection import (
    DEFAULT_THRESHOLD_MINUTES,
    Problem,
)
from flowledger.ops.health.rules import (
    CRITICAL,
    LEVELS,
    RULES,
    RULES_BY_CODE,
    Rule,
    RuleParams,
    open_task_priorities,
)

_BY_PRIORITY = {rule.priority: rule for rule in RULES}
_STALLED = RULES_BY_CODE["instance_stalled"].priority
_NAMES = ("prio", "rank", "kind", "key", "instance_id", "task_id", "node_key", "job_id", "since")


def _rank(rule: Rule) -> int:
    return 0 if rule.level == CRITICAL else 1


def _rows(rule: Rule, counting: RuleParams) -> Any:
    """The rows of ``rule`` with ``prio``, ``rank`` (0: critical), ``kind``, ``key``."""
    rows = rule.build(counting).subquery(f"r{rule.priority}")
    kind, key = dedup_key(rule, rows)
    return select(
        literal(rule.priority, Integer).label("prio"),
        literal(_rank(rule), Integer).label("rank"),
        kind.label("kind"),
        key.label("key"),
        cast(rows.c.instance_id, BigInteger).label("instance_id"),
        cast(rows.c.task_id, BigInteger).label("task_id"),
        cast(rows.c.node_key, String).label("node_key"),
        cast(rows.c.job_id, BigInteger).label("job_id"),
        type_coerce(rows.c.since, UTCDateTime()).label("since"),
        cast(rows.c.detail, String).label("detail"),
    )


def _other_rows(counting: RuleParams) -> Any:
    """The rows of every rule without a ``when``, each key once. The job
    rules' rows (keyed by task or job: few) keep their lowest priority, then
    the oldest ``since``, the lowest job id; an instance-level rule's rows
    are one per instance already (their key is the rule and the instance),
    so they are not sorted at all (tens of thousands of dead deliveries)."""
    others = [rule for rule in RULES if rule.when is None]
    found = union_all(*(_rows(r, counting) for r in others if r.group != "instance"))
    found_rows = found.subquery("job_found")
    ranked = select(
        found_rows,
        func.row_number()
        .over(
            partition_by=(found_rows.c.kind, found_rows.c.key),
            order_by=(found_rows.c.prio, found_rows.c.since, found_rows.c.job_id),
        )
        .label("nth"),
    ).subquery("ranked")
    jobs_best = select(*(ranked.c[name] for name in (*_NAMES, "detail"))).where(ranked.c.nth == 1)
    return union_all(jobs_best, *(_rows(r, counting) for r in others if r.group == "instance"))


def _rank_of_open(prio: Any) -> Any:
    return case(
        *((prio == rule.priority, literal(_rank(rule), Integer)) for rule in RULES if rule.when),
        else_=literal(1, Integer),
    )


#: the bind parameters of the keyset (the sort key's parts) and the row limit
_AFTER = (
    bindparam("after_rank", type_=Integer),
    bindparam("after_since", type_=UTCDateTime()),
    bindparam("after_instance", type_=BigInteger),
    bindparam("after_task", type_=BigInteger),
    bindparam("after_prio", type_=Integer),
)
_ROWS = bindparam("page_rows", type_=Integer)


def page_statement(
    params: RuleParams, *, rule: str | None = None, level: str | None = None, keyset: bool = False
) -> Any:
    """The rows (at most ``page_rows``) after the keyset (``after_…``, when
    ``keyset``) and the counts (see the module docstring); the bind
    parameters of ``params`` too when it is ``bound``."""
    counting = replace(params, counting=True)
    others = _other_rows(counting).cte("other_problems")
    # the open tasks' rows: read once, used twice (the statement plans
    # their conditions once; one of them reads the partitioned attempts)
    open_rows = (
        open_task_priorities(counting)
        .add_columns(tasks.c.node_key, tasks.c.created_at)
        .cte("open_tasks")
    )
    # an open task's rule loses to a job rule of lower priority on the task…
    beaten = exists().where(
        others.c.kind == 0, others.c.key == open_rows.c.task_id, others.c.prio < open_rows.c.prio
    )
    opened = select(
        open_rows.c.prio,
        _rank_of_open(open_rows.c.prio).label("rank"),
        literal(0, Integer).label("kind"),
        cast(open_rows.c.task_id, BigInteger).label("key"),
        cast(open_rows.c.instance_id, BigInteger).label("instance_id"),
        cast(open_rows.c.task_id, BigInteger).label("task_id"),
        cast(open_rows.c.node_key, String).label("node_key"),
        cast(null(), BigInteger).label("job_id"),
        type_coerce(open_rows.c.created_at, UTCDateTime()).label("since"),
        cast(null(), String).label("detail"),
    ).where(open_rows.c.prio.isnot(None), ~beaten)
    # …and a job rule's row on a task loses to the task's open-task rule of
    # lower priority
    as_open = open_rows.alias("as_open")
    wins = exists().where(
        others.c.kind == 0,
        as_open.c.task_id == others.c.key,
        as_open.c.prio.isnot(None),
        as_open.c.prio < others.c.prio,
    )
    # a task or job problem hides its instance's instance_stalled (an open
    # task's instance is never stalled: stalled means no open task)
    with_problem = select(others.c.instance_id).where(
        others.c.kind < 2, others.c.instance_id.isnot(None)
    )
    kept = select(*(others.c[name] for name in (*_NAMES, "detail"))).where(
        ~wins,
        ~and_(others.c.prio == _STALLED, others.c.instance_id.in_(with_problem)),
    )
    # every problem once: the page's rows and the counts are read from it
    best = union_all(opened, kept).cte("best")
    order = _order(best)
    query = select(best)
    if rule is not None:
        query = query.where(best.c.prio == RULES_BY_CODE[rule].priority)
    if level is not None:
        query = query.where(best.c.rank == (0 if level == CRITICAL else 1))
    if keyset:
        query = query.where(tuple_(*order) > tuple_(*_AFTER))
    page = _with_task_columns(query.order_by(*order).limit(_ROWS).subquery("page"), counting)
    counted = select(
        literal(1, Integer).label("part"),
        best.c.prio,
        *(null().label(name) for name in _NAMES if name != "prio"),
        null().label("detail"),
        func.count().label("n"),
    ).group_by(best.c.prio)
    rows = union_all(
        select(literal(0, Integer).label("part"), page, null().label("n")), counted
    ).subquery("rows")
    return select(rows).order_by(rows.c.part, *_order(rows))


def _order(rows: Any) -> tuple[Any, ...]:
    """The inspection's order: critical first, ``since``, instance, task, priority."""
    return (
        rows.c.rank,
        rows.c.since,
        func.coalesce(rows.c.instance_id, 0),
        func.coalesce(rows.c.task_id, 0),
        rows.c.prio,
    )


def _with_task_columns(page: Any, counting: RuleParams) -> Any:
    """The page's rows, an open task's ``job_id`` and ``detail`` filled by
    its rule's :data:`~flowledger.ops.health.rule_queries.TaskRow` (only
    for the rows of the page)."""
    job_ids = []
    details = []
    for rule in RULES:
        if rule.row is None:
            continue
        job_id, detail = rule.row(counting)
        job_ids.append((page.c.prio == rule.priority, cast(job_id, BigInteger)))
        details.append((page.c.prio == rule.priority, cast(detail, String)))
    return (
        select(
            *(page.c[name] for name in _NAMES if name != "job_id"),
            case(*job_ids, else_=page.c.job_id).label("job_id"),
            case(*details, else_=page.c.detail).label("detail"),
        )
        .select_from(page.outerjoin(tasks, tasks.c.id == page.c.task_id))
        .subquery("page_rows")
    )


def _problem(row: Any) -> Problem:
    rule = _BY_PRIORITY[int(row.prio)]
    return Problem(
        rule=rule.code,
        level=rule.level,
        instance_id=None if row.instance_id is None else int(row.instance_id),
        task_id=None if row.task_id is None else int(row.task_id),
        node_key=row.node_key,
        job_id=None if row.job_id is None else int(row.job_id),
        since=row.since,
        detail=row.detail,
    )


@lru_cache(maxsize=64)
def _built(shape: RuleParams, rule: str | None, level: str | None, keyset: bool) -> Any:
    """The statement of ``shape`` (bound parameters), filters and keyset,
    built once: a pure memo of an immutable statement (building it costs
    tens of milliseconds of Python, as much as running it on a small
    database); at most 8 shapes x 15 rules x 3 levels x 2."""
    return page_statement(shape, rule=rule, level=level, keyset=keyset)


@dataclass(frozen=True)
class InspectionPage:
    """A page of problems, the keyset of its last item when more follow,
    and the summary (``byRule``, ``byLevel``) of every problem."""

    items: list[Problem]
    next: tuple[Any, ...] | None
    summary: dict[str, Any]


async def problem_page(
    conn: AsyncConnection,
    *,
    now: datetime,
    threshold: timedelta = timedelta(minutes=DEFAULT_THRESHOLD_MINUTES),
    tenants: Sequence[str] | None = None,
    definition_key: str | None = None,
    rule: str | None = None,
    level: str | None = None,
    after: tuple[Any, ...] | None = None,
    limit: int = 50,
) -> InspectionPage:
    """What ``page(inspect(…), rule=…, level=…, after=…, limit=…)`` and
    ``summarize(inspect(…))`` give, by one statement."""
    params = RuleParams(
        now=now, threshold=threshold, tenants=tenants, definition_key=definition_key
    )
    values = params.bind_values()
    values[_ROWS.key] = limit + 1
    if after is not None:
        values.update(zip((b.key for b in _AFTER), after, strict=True))
    # no JIT (see inspection.run_rules); the problems are held once (a CTE of
    # up to ~100,000 rows on a volume database) without spilling to disk
    await set_local(conn, jit="off", work_mem="32MB")
    statement = _built(params.shape(), rule, level, after is not None)
    items: list[Problem] = []
    by_rule = {r.code: 0 for r in RULES}
    by_level = dict.fromkeys(LEVELS, 0)
    for row in await conn.execute(statement, values):
        if row.part == 0:
            items.append(_problem(row))
            continue
        counted = _BY_PRIORITY[int(row.prio)]
        by_rule[counted.code] += int(row.n)
        by_level[counted.level] += int(row.n)
    more = len(items) > limit
    items = items[:limit]
    return InspectionPage(
        items=items,
        next=items[-1].sort_key if more and items else None,
        summary={"byRule": by_rule, "byLevel": by_level},
    )
