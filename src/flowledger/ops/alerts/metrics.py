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

The four job metrics keep the runtime status panel's definitions
(:func:`~flowledger.ops.runtime.status.job_figures`,
:func:`~flowledger.ops.runtime.status.attempt_figures`), read for every
scope of a measure() call at once by :mod:`flowledger.ops.alerts.figures`
(tests/alerts compare the two), so the alert, the panel and ``/metrics``
agree.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from types import MappingProxyType
from typing import Any, Protocol

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_tasks
from flowledger.ops.alerts.figures import Scope, attempt_figures_of, job_figures_of
from flowledger.ops.health.score import engine_health_score_value


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


@dataclass
class _Pass:
    """The scopes of one measure() call and the figures read for them: the
    job and attempt figures of every scope are read together, once."""

    scopes: tuple[Scope, ...]
    figures: dict[Any, dict[Scope, dict[str, Any]]] = field(default_factory=dict)


_current: ContextVar[_Pass | None] = ContextVar("alert_pass", default=None)

_Figures = Callable[
    [AsyncConnection, datetime, Sequence[Scope]], Awaitable[dict[Scope, dict[str, Any]]]
]


async def _shared(
    conn: AsyncConnection, figures: _Figures, now: datetime, tenant_ids: list[str] | None
) -> dict[str, Any]:
    """The ``figures`` of ``tenant_ids``' scope; within a measure() call read
    once for every scope of the call."""
    scope: Scope = None if tenant_ids is None else tuple(tenant_ids)
    run = _current.get()
    if run is None:
        return (await figures(conn, now, [scope]))[scope]
    found = run.figures.get(figures)
    if found is None or scope not in found:
        found = await figures(conn, now, [*run.scopes, scope])
        run.figures[figures] = found
    return found[scope]


def _from_jobs(key: str) -> Provider:
    async def provider(
        conn: AsyncConnection, tenant_ids: list[str] | None, *, now: datetime
    ) -> float | None:
        return float((await _shared(conn, job_figures_of, now, tenant_ids))[key])

    return provider


async def _failure_rate(
    conn: AsyncConnection, tenant_ids: list[str] | None, *, now: datetime
) -> float | None:
    rate = (await _shared(conn, attempt_figures_of, now, tenant_ids))["failureRate1h"]
    return None if rate is None else round(float(rate) * 100, 6)


async def _health_score(
    conn: AsyncConnection, tenant_ids: list[str] | None, *, now: datetime
) -> float | None:
    """The health inspection's engine health score (SPEC O-16, O-22), with
    the global job and attempt figures the job metrics use (what
    :func:`~flowledger.ops.runtime.status.runtime_figures` gives)."""
    runtime = dict(await _shared(conn, job_figures_of, now, None))
    runtime.update(await _shared(conn, attempt_figures_of, now, None))
    return float(await engine_health_score_value(conn, tenant_ids, now=now, runtime=runtime))


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
    (the job and attempt figures of every scope are read together, once:
    :mod:`flowledger.ops.alerts.figures`)."""
    values: dict[tuple[str, str | None], float | None] = {}
    pairs = dict.fromkeys(wanted)
    scopes = dict.fromkeys(None if tenant is None else (tenant,) for _, tenant in pairs)
    token = _current.set(_Pass(scopes=(None, *(s for s in scopes if s is not None))))
    try:
        for name, tenant in pairs:
            metric = table.get(name)
            if metric is None:
                values[(name, tenant)] = None
                continue
            values[(name, tenant)] = await metric.provider(
                conn, None if tenant is None else [tenant], now=now
            )
    finally:
        _current.reset(token)
    return values
