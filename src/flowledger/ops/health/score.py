"""The engine health score (SPEC O-16): 0-100 points from the health
inspection and the runtime status (L-23). It is the ``engine_health_score``
metric that alerting uses and what the health history records. Read-only.

The formula: 100 minus these deductions, each capped, the result never
below 0 (``points`` of :class:`HealthScore` lists every deduction):

===============  ===========================================  ====
deduction        points                                        cap
===============  ===========================================  ====
critical         5 per critical inspection problem              40
warning          1 per warning inspection problem               15
deadJobs         2 per dead job                                 15
stuckJobs        5 per stuck running job (lease expired or      15
                 deadline reached)
backlog          1 per full minute the oldest due pending job   10
                 has waited, beyond the first minute
failureRate      50 x failed attempts / attempts of the last    15
                 hour (rounded down)
===============  ===========================================  ====

The inspection part runs at the default threshold (30 min) within
``tenant_ids`` (None: every tenant); the runtime figures are global, as
L-23 defines them.

:func:`engine_health_score` (the alert metric every minute, ``GET
/engine/health-score``, the history's snapshots) takes the inspection's
counts from :mod:`flowledger.ops.health.counts` (one statement, no problem
rows); :func:`health_score_of` scores a list of problems the caller already
has (the inspection page's summary, ``flowledger health``). Both apply
:func:`score_from` to the same counts (tests/ops/test_health_counts.py).
The alert metric takes :func:`engine_health_score_value`, the same score
without counting when both inspection deductions are at their caps
(:mod:`flowledger.ops.health.saturation`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.health_sql import without_jit
from flowledger.ops.health.counts import problem_counts
from flowledger.ops.health.inspection import DEFAULT_THRESHOLD_MINUTES, Problem, summarize
from flowledger.ops.health.rules import RuleParams
from flowledger.ops.health.saturation import CRITICAL_CAP, WARNING_CAP, caps_reached
from flowledger.ops.runtime.status import runtime_figures

CAPS = {
    "critical": 40,
    "warning": 15,
    "deadJobs": 15,
    "stuckJobs": 15,
    "backlog": 10,
    "failureRate": 15,
}


@dataclass(frozen=True)
class HealthScore:
    score: int
    points: dict[str, int]
    inputs: dict[str, Any]
    by_rule: dict[str, int] = field(default_factory=dict)
    by_level: dict[str, int] = field(default_factory=dict)

    def to_public(self) -> dict[str, Any]:
        return {"score": self.score, "points": self.points, "inputs": self.inputs}


def score_from(by_level: dict[str, int], runtime: dict[str, Any]) -> tuple[int, dict[str, int]]:
    """The score and its deductions from the inspection's counts by level and
    the runtime figures (``dead``, ``stuck``, ``oldestQueuedSeconds``,
    ``failureRate1h``)."""
    oldest = runtime.get("oldestQueuedSeconds") or 0
    rate = runtime.get("failureRate1h") or 0
    raw = {
        "critical": 5 * by_level.get("critical", 0),
        "warning": by_level.get("warning", 0),
        "deadJobs": 2 * int(runtime.get("dead") or 0),
        "stuckJobs": 5 * int(runtime.get("stuck") or 0),
        "backlog": max(0, int(oldest // 60) - 1),
        "failureRate": int(50 * rate),
    }
    points = {name: min(value, CAPS[name]) for name, value in raw.items()}
    return max(0, 100 - sum(points.values())), points


def inputs_of(by_level: dict[str, int], runtime: dict[str, Any]) -> dict[str, Any]:
    return {
        "critical": by_level.get("critical", 0),
        "warning": by_level.get("warning", 0),
        "deadJobs": runtime.get("dead", 0),
        "stuckJobs": runtime.get("stuck", 0),
        "backlog": runtime.get("backlog", 0),
        "oldestQueuedSeconds": runtime.get("oldestQueuedSeconds"),
        "failureRate1h": runtime.get("failureRate1h"),
    }


def health_score_from_counts(summary: dict[str, Any], runtime: dict[str, Any]) -> HealthScore:
    """The score from the inspection's summary (``byRule``, ``byLevel``) and
    the runtime figures."""
    score, points = score_from(summary["byLevel"], runtime)
    return HealthScore(
        score=score,
        points=points,
        inputs=inputs_of(summary["byLevel"], runtime),
        by_rule=summary["byRule"],
        by_level=summary["byLevel"],
    )


def health_score_of(problems: list[Problem], runtime: dict[str, Any]) -> HealthScore:
    """The score of an inspection's problems (what its page lists)."""
    return health_score_from_counts(summarize(problems), runtime)


async def engine_health_score(
    conn: AsyncConnection,
    tenant_ids: Sequence[str] | list[str] | None,
    *,
    now: datetime,
    runtime: dict[str, Any] | None = None,
) -> HealthScore:
    """The score at ``now`` with its points and inputs, from the inspection's
    counts (:func:`~flowledger.ops.health.counts.problem_counts`: one
    statement, no problem rows) — equal to :func:`health_score_of` of
    :func:`~flowledger.ops.health.inspection.inspect`'s problems.
    ``runtime``: the global :func:`~flowledger.ops.runtime.status.runtime_figures`
    at ``now`` in ``conn``'s snapshot, when the caller has them already."""
    summary = await problem_counts(
        conn,
        now=now,
        threshold=timedelta(minutes=DEFAULT_THRESHOLD_MINUTES),
        tenants=tenant_ids,
    )
    if runtime is None:
        runtime = await runtime_figures(conn, now)
    return health_score_from_counts(summary, runtime)


async def engine_health_score_value(
    conn: AsyncConnection,
    tenant_ids: Sequence[str] | list[str] | None,
    *,
    now: datetime,
    runtime: dict[str, Any],
) -> int:
    """The score alone — the alert metric ``engine_health_score`` — equal
    to :func:`engine_health_score`'s. When the inspection's critical and
    warning deductions are both at their caps
    (:func:`~flowledger.ops.health.saturation.caps_reached`: a few short
    reads), the score does not depend on the exact counts and they are not
    counted; otherwise it is :func:`engine_health_score`'s."""
    params = RuleParams(
        now=now, threshold=timedelta(minutes=DEFAULT_THRESHOLD_MINUTES), tenants=tenant_ids
    )
    await without_jit(conn)
    if await caps_reached(conn, params):
        capped = {"critical": CRITICAL_CAP, "warning": WARNING_CAP}
        return score_from(capped, runtime)[0]
    return (await engine_health_score(conn, tenant_ids, now=now, runtime=runtime)).score
