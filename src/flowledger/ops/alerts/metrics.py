"""The alert metrics of SPEC O-22 as named providers, derived from the
database at evaluation (or scrape) time — there is no collection task.

A provider is ``async (conn, tenant_ids, *, now) -> float | None``:
``tenant_ids`` None means the whole engine ("overall"), a list narrows the
figure to those tenants' jobs; None as the value means "no data" (e.g. no
attempt in the last hour), for which no alert condition holds.

=====================  =======  ===========================================
metric                 unit     definition (:mod:`flowledger.ops.runtime.status`)
=====================  =======  ===========================================
queue_backlog          items    ``backlog``: pending jobs with run_at <= now
dead_letters           items    ``dead``: dead jobs
job_failure_rate       %        ``failureRate1h`` x 100: failed attempts /
                                attempts started in the last hour
stuck_jobs             items    ``stuck``: running jobs whose lease is
                                missing or expired or whose deadline passed
engine_health_score    points   the health inspection's engine health score
                                (:mod:`flowledger.ops.health.score`)
overdue_tasks          items    pending tasks past their deadline's due time
                                (issue 31 item 4; ``workflow_tasks.due_at``)
=====================  =======  ===========================================

The four job metrics call the runtime status panel's own queries
(:func:`~flowledger.ops.runtime.status.job_figures`,
:func:`~flowledger.ops.runtime.status.attempt_figures`), so the alert, the
panel and ``/metrics`` always agree.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from types import MappingProxyType
from typing import Any, Protocol

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_tasks
from flowledger.ops.health.score import engine_health_score
from flowledger.ops.runtime.status import attempt_figures, job_figures


class Provider(Protocol):
    def __call__(
        self, conn: AsyncConnection, tenant_ids: list[str] | None, *, now: datetime
    ) -> Awaitable[float | None]: ...


@dataclass(frozen=True)
class Metric:
    """A named metric: its unit, a one-line description and its provider."""

    name: str
    unit: str
    description: str
    provider: Provider


def metric_table(*found: Metric) -> Mapping[str, Metric]:
    """An immutable table of ``found`` by name, in order (a name twice is refused)."""
    table: dict[str, Metric] = {}
    for metric in found:
        if metric.name in table:
            raise ValueError(f"metric {metric.name!r} is named twice")
        table[metric.name] = metric
    return MappingProxyType(table)


# job_figures / attempt_figures results of the current measure() call, so
# the metrics of one scope share their queries (and the health score takes
# the global ones: its runtime figures)
_figures: ContextVar[dict[Any, dict[str, Any]] | None] = ContextVar("alert_figures", default=None)

_Figures = Callable[[AsyncConnection, datetime, list[str] | None], Awaitable[dict[str, Any]]]


async def _shared(
    conn: AsyncConnection, figures: _Figures, now: datetime, tenant_ids: list[str] | None
) -> dict[str, Any]:
    """``figures(conn, now, tenant_ids)``, once per scope in a measure() call."""
    memo = _figures.get()
    scope = (figures, now, None if tenant_ids is None else tuple(tenant_ids))
    found = None if memo is None else memo.get(scope)
    if found is None:
        found = await figures(conn, now, tenant_ids)
        if memo is not None:
            memo[scope] = found
    return found


def _from_jobs(key: str) -> Provider:
    async def provider(
        conn: AsyncConnection, tenant_ids: list[str] | None, *, now: datetime
    ) -> float | None:
        return float((await _shared(conn, job_figures, now, tenant_ids))[key])

    return provider


async def _failure_rate(
    conn: AsyncConnection, tenant_ids: list[str] | None, *, now: datetime
) -> float | None:
    rate = (await _shared(conn, attempt_figures, now, tenant_ids))["failureRate1h"]
    return None if rate is None else round(float(rate) * 100, 6)


async def _health_score(
    conn: AsyncConnection, tenant_ids: list[str] | None, *, now: datetime
) -> float | None:
    """The health inspection's engine health score (SPEC O-16, O-22), with
    the global job and attempt figures the job metrics use (what
    :func:`~flowledger.ops.runtime.status.runtime_figures` gives)."""
    runtime = dict(await _shared(conn, job_figures, now, None))
    runtime.update(await _shared(conn, attempt_figures, now, None))
    score = await engine_health_score(conn, tenant_ids, now=now, runtime=runtime)
    return float(score.score)


async def _overdue_tasks(
    conn: AsyncConnection, tenant_ids: list[str] | None, *, now: datetime
) -> float | None:
    """Pending tasks whose due time has passed (the instances list's
    ``deadline=overdue``, counted per task; ``ix_workflow_tasks_tenant_status``)."""
    k = workflow_tasks.c
    query = select(func.count()).where(
        k.status == "pending", k.due_at.is_not(None), k.due_at <= now
    )
    if tenant_ids is not None:
        query = query.where(k.tenant_id.in_(tenant_ids))
    return float((await conn.execute(query)).scalar_one())


HEALTH_SCORE = "engine_health_score"

METRICS: Mapping[str, Metric] = metric_table(
    Metric("queue_backlog", "items", "pending jobs that are due", _from_jobs("backlog")),
    Metric("dead_letters", "items", "dead jobs", _from_jobs("dead")),
    Metric(
        "job_failure_rate",
        "percent",
        "failed share of the attempts started in the last hour",
        _failure_rate,
    ),
    Metric(
        "stuck_jobs",
        "items",
        "running jobs whose lease is missing or expired or whose deadline passed",
        _from_jobs("stuck"),
    ),
    Metric(HEALTH_SCORE, "points", "engine health score (0-100)", _health_score),
    Metric("overdue_tasks", "items", "pending tasks past their due time", _overdue_tasks),
)
"""Every metric rules, the evaluator and ``/metrics`` know, by name (an
immutable table: a caller with other metrics passes its own table)."""


def get_metric(name: str, table: Mapping[str, Metric] = METRICS) -> Metric | None:
    return table.get(name)


def metrics(table: Mapping[str, Metric] = METRICS) -> list[Metric]:
    """Every metric of ``table``, in order."""
    return list(table.values())


def metric_names(table: Mapping[str, Metric] = METRICS) -> list[str]:
    return list(table)


async def measure(
    conn: AsyncConnection,
    wanted: Sequence[tuple[str, str | None]],
    *,
    now: datetime,
    table: Mapping[str, Metric] = METRICS,
) -> dict[tuple[str, str | None], float | None]:
    """The value of each distinct (metric, tenant) pair of ``wanted``
    (tenant None: overall), each computed once, all in ``conn``'s snapshot
    (the job metrics of one scope share one :func:`job_figures` call)."""
    values: dict[tuple[str, str | None], float | None] = {}
    token = _figures.set({})
    try:
        for name, tenant in dict.fromkeys(wanted):
            metric = table.get(name)
            if metric is None:
                values[(name, tenant)] = None
                continue
            values[(name, tenant)] = await metric.provider(
                conn, None if tenant is None else [tenant], now=now
            )
    finally:
        _figures.reset(token)
    return values
