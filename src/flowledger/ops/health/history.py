"""The health history (SPEC O-16): snapshots of the health score, the
inspection's counts by rule and level and the runtime-status figures,
written by the leader-gated snapshot service
(:mod:`flowledger.handlers.health_service`) into
``workflow_health_snapshots``, and the series read back for the console.

- :func:`snapshot_due`, :func:`measure`, :func:`store_snapshot`: a snapshot
  is written unless one was taken less than 0.9 interval ago (so a leader
  change never doubles a point); its figures are measured in a read
  transaction (never holding SQLite's writer during the inspection). Old
  snapshots are removed by the retention policy ``workflow_health_snapshots``
  (SPEC O-20, :mod:`flowledger.ops.retention.runs`).
- :func:`history` returns the snapshots in ``[from, to]``, at most one per
  interval (the newest of each interval bucket, buckets aligned on the Unix
  epoch), oldest first. Served by the unique index on ``taken_at``.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.health_schema import workflow_health_snapshots as snapshots
from flowledger.ops.health.score import engine_health_score
from flowledger.ops.runtime.status import runtime_figures

RUNTIME_FIGURES = ("stuck", "backlog", "oldestQueuedSeconds", "dead", "inFlight", "failureRate1h")
MAX_POINTS = 10_000


async def snapshot_due(conn: AsyncConnection, *, now: datetime, interval: timedelta) -> bool:
    """True unless a snapshot was taken less than 0.9 interval before ``now``."""
    latest = (await conn.execute(select(func.max(snapshots.c.taken_at)))).scalar_one_or_none()
    return latest is None or now - latest >= interval * 0.9


async def measure(conn: AsyncConnection, *, now: datetime) -> dict[str, Any]:
    """The snapshot's figures at ``now`` (read-only)."""
    score = await engine_health_score(conn, None, now=now)
    runtime = await runtime_figures(conn, now)
    return {
        "taken_at": now,
        "score": score.score,
        "by_rule": score.by_rule,
        "by_level": score.by_level,
        "runtime": {name: runtime.get(name) for name in RUNTIME_FIGURES},
    }


async def store_snapshot(
    conn: AsyncConnection, figures: dict[str, Any], *, interval: timedelta
) -> bool:
    """Write ``figures`` unless a snapshot became due-no-more meanwhile (old
    snapshots are removed by the retention policy ``workflow_health_snapshots``,
    SPEC O-20)."""
    now = figures["taken_at"]
    if not await snapshot_due(conn, now=now, interval=interval):
        return False
    await conn.execute(snapshots.insert().values(**figures))
    return True


async def history(
    conn: AsyncConnection, *, start: datetime, end: datetime, interval: timedelta
) -> list[dict[str, Any]]:
    """The series in ``[start, end]``, at most one point per interval."""
    rows = await conn.execute(
        select(snapshots)
        .where(snapshots.c.taken_at >= start, snapshots.c.taken_at <= end)
        .order_by(snapshots.c.taken_at)
    )
    step = max(1.0, interval.total_seconds())
    points: dict[int, dict[str, Any]] = {}
    for row in rows:
        bucket = int(row.taken_at.timestamp() // step)
        points[bucket] = {
            "takenAt": row.taken_at,
            "score": row.score,
            "byRule": row.by_rule,
            "byLevel": row.by_level,
            "runtime": row.runtime,
        }
    return [points[b] for b in sorted(points)][-MAX_POINTS:]
