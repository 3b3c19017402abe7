"""The Prometheus exposition of ``GET /metrics`` (SPEC O-22): every figure
is derived from the database at scrape time, so it is correct however many
worker and API processes run (nothing is counted in process memory; no
prometheus-client multiprocess mode is needed) and every API replica serves
the same numbers.

=============================================  ========  ====================
metric                                         type      from
=============================================  ========  ====================
flowledger_queue_backlog_items{tenant}         gauge     alert metric
flowledger_dead_letters_items{tenant}          gauge     alert metric
flowledger_job_failure_rate_percent{tenant}    gauge     alert metric (absent
                                                         without attempts)
flowledger_stuck_jobs_items{tenant}            gauge     alert metric
flowledger_engine_health_score_points{tenant}  gauge     alert metric
=============================================  ========  ====================

The five alert gauges are exported twice, with the same values: under the
names SPEC O-22 gives them (``engine_health_score``, ``queue_backlog``,
``dead_letters``, ``job_failure_rate``, ``stuck_jobs``, each with the
``tenant`` label), which alert rules and the runtime status panel use, and
as ``flowledger_<name>_<unit>`` above, following Prometheus naming (the
Grafana dashboard uses these). The other series:

=============================================  ========  ====================
metric                                         type      from
=============================================  ========  ====================
flowledger_jobs_enqueued_total{type}           counter   job rows per type
flowledger_jobs_settled_total{type,outcome}    counter   jobs settled as
                                                         succeeded, canceled,
                                                         dead, failed
flowledger_jobs{type,status}                   gauge     jobs per status now
flowledger_job_attempt_duration_seconds{type}  gauge     attempts started in
                                               histogram the last hour
flowledger_job_queue_delay_seconds{pool}       gauge     started - scheduled of
                                               histogram those attempts
flowledger_workers_live / _active              gauge     runtime status nodes
flowledger_slots_in_use / _capacity            gauge     of live workers
=============================================  ========  ====================

Figures are taken at the ``now`` given (``GET /metrics``: the database's
time, like the runtime status panel). ``tenant="*"`` is the whole engine;
per-tenant series are exported for the tenants that have alert rules (a
tenant list would otherwise need a scan of every job). The alert gauges are
the very providers the evaluator uses, so a dashboard and an alert never
disagree, and they equal the runtime status panel (L-23) for ``tenant="*"``.

Counters count rows that exist: retention deleting old jobs, or a manual
retry taking a job out of ``dead``, lowers them, which Prometheus reads as
a counter reset (``rate()`` stays sane). The two histograms are *gauge
histograms* over a sliding hour (the text format shows them as histograms
with ``_gcount``/``_gsum``): use ``histogram_quantile`` on the buckets
directly, not on ``rate()`` of them.

Queries (PostgreSQL): the status x type counts are one index-only GROUP BY
over ``ix_workflow_jobs_status_type``; the hour's attempts a range of
``ix_workflow_job_executions_started`` joined to their jobs by primary key;
nodes by ``ix_system_scheduler_nodes_heartbeat``.
"""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import (
    CounterMetricFamily,
    GaugeHistogramMetricFamily,
    GaugeMetricFamily,
    Metric,
)
from sqlalchemy import case, func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.alert_schema import workflow_alert_rules as rules
from flowledger.db.database import Database
from flowledger.db.portable import seconds_between
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.alerts.metrics import measure, metrics
from flowledger.ops.runtime.status import RATE_WINDOW, worker_figures
from flowledger.states import JobStatus

PREFIX = "flowledger_"
OVERALL = "*"
SETTLED = (JobStatus.SUCCEEDED, JobStatus.CANCELED, JobStatus.DEAD, JobStatus.FAILED)
DURATION_BUCKETS_S = (0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300)
DELAY_BUCKETS_S = (0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 300, 900, 3600)
_UNIT = {"percent": "percent", "items": "items", "points": "points"}


async def _alert_gauges(conn: AsyncConnection, now: datetime) -> list[Metric]:
    tenants = [
        t
        for (t,) in await conn.execute(
            select(rules.c.tenant_id).where(rules.c.tenant_id.is_not(None)).distinct()
        )
    ]
    scopes: list[str | None] = [None, *sorted(tenants)]
    found = metrics()
    values = await measure(conn, [(m.name, s) for m in found for s in scopes], now=now)
    out: list[Metric] = []
    for metric in found:
        for name in (metric.name, f"{PREFIX}{metric.name}_{_UNIT.get(metric.unit, metric.unit)}"):
            family = GaugeMetricFamily(
                name, f"{metric.description} (alert metric, {metric.unit})", labels=["tenant"]
            )
            for scope in scopes:
                value = values[(metric.name, scope)]
                if value is not None:
                    family.add_metric([OVERALL if scope is None else scope], value)
            out.append(family)
    return out


async def _job_families(conn: AsyncConnection) -> list[Metric]:
    rows = (
        await conn.execute(
            select(jobs.c.status, jobs.c.type, func.count()).group_by(jobs.c.status, jobs.c.type)
        )
    ).all()
    enqueued = CounterMetricFamily(
        f"{PREFIX}jobs_enqueued", "jobs enqueued (rows in the ledger), by type", labels=["type"]
    )
    settled = CounterMetricFamily(
        f"{PREFIX}jobs_settled",
        "jobs settled for good, by type and outcome (their current status)",
        labels=["type", "outcome"],
    )
    current = GaugeMetricFamily(
        f"{PREFIX}jobs", "jobs by type and status now", labels=["type", "status"]
    )
    per_type: dict[str, int] = {}
    for status, job_type, count in sorted(rows):
        per_type[job_type] = per_type.get(job_type, 0) + int(count)
        current.add_metric([job_type, status], int(count))
        if status in SETTLED:
            settled.add_metric([job_type, status], int(count))
    for job_type, count in sorted(per_type.items()):
        enqueued.add_metric([job_type], count)
    return [enqueued, settled, current]


def _bucket_columns(expr: Any, bounds: tuple[float, ...], prefix: str) -> list[Any]:
    return [
        func.coalesce(func.sum(case((expr <= bound, 1), else_=0)), 0).label(f"{prefix}{i}")
        for i, bound in enumerate(bounds)
    ]


async def _attempt_histograms(conn: AsyncConnection, now: datetime) -> list[Metric]:
    hour = (executions.c.started_at >= now - RATE_WINDOW, executions.c.started_at <= now)
    joined = executions.join(jobs, jobs.c.id == executions.c.job_id)
    seconds = executions.c.duration_ms / 1000.0
    duration_rows = (
        await conn.execute(
            select(
                jobs.c.type,
                func.count(executions.c.duration_ms).label("n"),
                func.coalesce(func.sum(seconds), 0).label("total"),
                *_bucket_columns(seconds, DURATION_BUCKETS_S, "b"),
            )
            .select_from(joined)
            .where(*hour, executions.c.duration_ms.is_not(None))
            .group_by(jobs.c.type)
        )
    ).all()
    duration = GaugeHistogramMetricFamily(
        f"{PREFIX}job_attempt_duration_seconds",
        "attempt durations over the last hour, by job type",
        labels=["type"],
    )
    for row in sorted(duration_rows, key=lambda r: r.type):
        buckets = [(str(b), float(row._mapping[f"b{i}"])) for i, b in enumerate(DURATION_BUCKETS_S)]
        buckets.append(("+Inf", float(row.n)))
        duration.add_metric([row.type], buckets, gsum_value=float(row.total))

    delay_s = seconds_between(executions.c.scheduled_at, executions.c.started_at)
    delay_rows = (
        await conn.execute(
            select(
                jobs.c.pool,
                func.count().label("n"),
                func.coalesce(func.sum(delay_s), 0).label("total"),
                *_bucket_columns(delay_s, DELAY_BUCKETS_S, "b"),
            )
            .select_from(joined)
            .where(*hour)
            .group_by(jobs.c.pool)
        )
    ).all()
    delay = GaugeHistogramMetricFamily(
        f"{PREFIX}job_queue_delay_seconds",
        "queue delay (claimed minus due) of attempts started in the last hour, by pool",
        labels=["pool"],
    )
    for row in sorted(delay_rows, key=lambda r: r.pool):
        buckets = [(str(b), float(row._mapping[f"b{i}"])) for i, b in enumerate(DELAY_BUCKETS_S)]
        buckets.append(("+Inf", float(row.n)))
        delay.add_metric([row.pool], buckets, gsum_value=round(float(row.total), 6))
    return [duration, delay]


async def _worker_gauges(conn: AsyncConnection, now: datetime) -> list[Metric]:
    figures = await worker_figures(conn, now)
    out: list[Metric] = []
    for name, help_text, value in (
        (
            "workers_live",
            "live ledger workers (heartbeat within 10 min)",
            figures["liveWorkers"]["total"],
        ),
        (
            "workers_active",
            "active ledger workers (heartbeat within 90 s)",
            figures["liveWorkers"]["active"],
        ),
        ("slots_in_use", "execution slots in use on live workers", figures["slots"]["inUse"]),
        ("slots_capacity", "execution slots of live workers", figures["slots"]["capacity"]),
    ):
        family = GaugeMetricFamily(f"{PREFIX}{name}", help_text)
        family.add_metric([], float(value))
        out.append(family)
    return out


class _Snapshot:
    """A collector that yields families computed beforehand (the queries
    are async; prometheus-client's collectors are not)."""

    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


async def families(db: Database, *, now: datetime) -> list[Metric]:
    """Every metric family at ``now``, read in one snapshot."""
    async with db.read() as conn:
        out = await _alert_gauges(conn, now)
        out += await _job_families(conn)
        out += await _attempt_histograms(conn, now)
        out += await _worker_gauges(conn, now)
    return out


async def exposition(db: Database, *, now: datetime) -> bytes:
    """The text exposition format (0.0.4) of :func:`families`."""
    registry = CollectorRegistry(auto_describe=False)
    registry.register(_Snapshot(await families(db, now=now)))
    return generate_latest(registry)
