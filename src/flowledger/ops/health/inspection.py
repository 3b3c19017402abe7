"""The engine-wide health inspection (SPEC O-16): every rule of
:mod:`flowledger.ops.health.rules` run once over the caller's tenants — one
set-based query per rule, never a query per instance — then each task keeps
only its highest-priority problem (missing token > job anomaly > stuck), an
instance reported for any task or job problem is not also reported as
stalled, and the items are ordered critical first, oldest first, and paged
by keyset. Read-only.

The summary (``byRule``, ``byLevel``) counts every problem within the
threshold, tenants and definition key, whatever the ``rule`` / ``level``
filters and the page; ``score`` is added by the caller
(:mod:`flowledger.ops.health.score`).

This module builds every problem (one instance's diagnosis, the CLI, the
tests' reference); the API's inspection reads its page and summary with
:mod:`flowledger.ops.health.page`, which gives the same items and counts.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.health_sql import without_jit
from flowledger.ops.health.rules import (
    CRITICAL,
    LEVELS,
    RULES,
    RULES_BY_CODE,
    Rule,
    RuleParams,
)

DEFAULT_THRESHOLD_MINUTES = 30
MIN_THRESHOLD_MINUTES = 10
MAX_THRESHOLD_MINUTES = 1440


@dataclass(frozen=True)
class Problem:
    rule: str
    level: str
    instance_id: int | None
    task_id: int | None
    node_key: str | None
    job_id: int | None
    since: datetime
    detail: str | None
    definition_key: str | None = None

    @property
    def sort_key(self) -> tuple[int, datetime, int, int, int]:
        return (
            0 if self.level == CRITICAL else 1,
            self.since,
            self.instance_id or 0,
            self.task_id or 0,
            RULES_BY_CODE[self.rule].priority,
        )


def _as_int(value: Any) -> int | None:
    return None if value is None else int(value)


@lru_cache(maxsize=256)
def _built(code: str, shape: RuleParams) -> Any:
    """Rule ``code``'s statement for ``shape`` (bound parameters): built
    once per shape, not per call — building a rule's statement costs more
    than running it for one instance (the diagnostics drawer runs every
    rule); at most 8 shapes x 15 rules."""
    return RULES_BY_CODE[code].build(shape)


async def run_rules(
    conn: AsyncConnection, params: RuleParams, rules: Sequence[Rule] = RULES
) -> list[Problem]:
    """Every problem the ``rules`` find, before de-duplication. On
    PostgreSQL the transaction runs without JIT: the rules are short
    index-driven queries whose (pessimistic) cost estimates would otherwise
    make PostgreSQL spend far longer compiling them than running them."""
    await without_jit(conn)
    shape, values = params.shape(), params.bind_values()
    found: list[Problem] = []
    for rule in rules:
        for row in await conn.execute(_built(rule.code, shape), values):
            found.append(
                Problem(
                    rule=rule.code,
                    level=rule.level,
                    instance_id=_as_int(row.instance_id),
                    task_id=_as_int(row.task_id),
                    node_key=row.node_key,
                    job_id=_as_int(row.job_id),
                    since=row.since,
                    detail=row.detail,
                )
            )
    return found


def one_per_task(problems: list[Problem]) -> list[Problem]:
    """Each task keeps its highest-priority problem; an instance with any
    task or job problem is not also ``instance_stalled``."""
    best: dict[tuple[Any, ...], Problem] = {}
    for problem in problems:
        rule = RULES_BY_CODE[problem.rule]
        if problem.task_id is not None:
            key: tuple[Any, ...] = ("task", problem.task_id)
        elif rule.group == "job":
            key = ("job", problem.job_id)
        else:
            key = ("instance", problem.rule, problem.instance_id)
        held = best.get(key)
        if held is None or rule.priority < RULES_BY_CODE[held.rule].priority:
            best[key] = problem
    with_task_problem = {
        p.instance_id for p in best.values() if RULES_BY_CODE[p.rule].group != "instance"
    }
    return sorted(
        (
            p
            for p in best.values()
            if not (p.rule == "instance_stalled" and p.instance_id in with_task_problem)
        ),
        key=lambda p: p.sort_key,
    )


async def inspect(
    conn: AsyncConnection,
    *,
    now: datetime,
    threshold: timedelta = timedelta(minutes=DEFAULT_THRESHOLD_MINUTES),
    tenants: Sequence[str] | None = None,
    definition_key: str | None = None,
    instance_id: int | None = None,
) -> list[Problem]:
    """Every problem, one per task, ordered (critical first, oldest first)."""
    params = RuleParams(
        now=now,
        threshold=threshold,
        tenants=tenants,
        instance_id=instance_id,
        definition_key=definition_key,
    )
    return one_per_task(await run_rules(conn, params))


def summarize(problems: list[Problem]) -> dict[str, Any]:
    by_rule = {rule.code: 0 for rule in RULES}
    by_level = dict.fromkeys(LEVELS, 0)
    for problem in problems:
        by_rule[problem.rule] += 1
        by_level[problem.level] += 1
    return {"byRule": by_rule, "byLevel": by_level}


def page(
    problems: list[Problem],
    *,
    rule: str | None = None,
    level: str | None = None,
    after: tuple[Any, ...] | None = None,
    limit: int = 50,
) -> tuple[list[Problem], tuple[Any, ...] | None]:
    """The page after the keyset ``after`` (critical first, oldest first)."""
    selected = [
        p
        for p in problems
        if (rule is None or p.rule == rule)
        and (level is None or p.level == level)
        and (after is None or p.sort_key > after)
    ]
    items = selected[:limit]
    more = len(selected) > limit
    return items, (items[-1].sort_key if more and items else None)
