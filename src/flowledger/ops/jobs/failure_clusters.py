"""Failure clusters (SPEC L-24): dead and failed jobs grouped by error reason,
job type, instance or traceId, with their member errors and times and the
filter that selects exactly the cluster's jobs — the console hands it to the
replay dialog, the CLI to ``jobs replay``. Read-only.

Error reasons are grouped by ``last_error_fingerprint``, computed when the
error was written (:mod:`flowledger.ledger.fingerprint`), so a reason
cluster is an indexed group-by, never a scan of error texts; the pattern
shown is the normalized text of a member's error.

Index: ``ix_workflow_jobs_failure_clusters`` — partial on dead/failed,
(fingerprint, updated_at, id) including status, type, instance, trace and
tenant on PostgreSQL — makes the group-by of every clustering an index-only
scan of the failed part of the ledger, and each cluster's newest members a
short backward scan; for type clusters ``…_failure_types`` (type,
updated_at, id) plays that part, and by instance or trace the
``…_instance`` and ``…_trace`` indexes find the few members.

A cluster::

    {"id": "reason:3f2a…", "by": "reason", "key": "3f2a…",
     "pattern": "timeout after <n> ms calling https://erp.example/<path>",
     "count": 200, "firstSeenAt": …, "lastSeenAt": …,     # updated_at range
     "types": [{"type": "webhook_delivery", "count": 200}],
     "samples": [{"jobId", "type", "status", "error", "instanceId",
                  "traceId", "updatedAt"}, …],             # newest first
     "filter": {"fingerprint": "3f2a…", "statuses": ["dead", "failed"]}}

``filter`` uses the replay body's camelCase names and keeps every other
condition of the filter the clusters were built with (``types``, ``keyword``
…), so it selects exactly the ``count`` jobs. Jobs without the grouping value
(no fingerprint, no instance) form a cluster with ``key`` null and ``filter``
null: no filter can name exactly them.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from sqlalchemy import func, or_, select, union_all

from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import FlowledgerError
from flowledger.ledger.fingerprint import normalize_error
from flowledger.ops.jobs.filters import JobFilter
from flowledger.states import JobStatus

CLUSTERED_STATUSES = (JobStatus.DEAD.value, JobStatus.FAILED.value)
GROUPINGS = {
    "reason": jobs.c.last_error_fingerprint,
    "type": jobs.c.type,
    "instance": jobs.c.instance_id,
    "trace": jobs.c.trace_id,
}
_FILTER_KEY = {
    "reason": "fingerprint",
    "type": "types",
    "instance": "instanceId",
    "trace": "traceId",
}
MAX_LIMIT = 200
MAX_SAMPLES = 20


def _in_key(column: Any, keys: list[Any]) -> Any:
    present = [k for k in keys if k is not None]
    clause = column.in_(present)
    return or_(clause, column.is_(None)) if None in keys else clause


def _filter_body(flt: JobFilter, by: str, key: Any) -> dict[str, Any] | None:
    """The cluster's own condition plus every condition of ``flt``."""
    if key is None or flt.node_key or flt.definition_key:
        return None  # the replay body cannot name a node or a definition
    body: dict[str, Any] = {"statuses": list(flt.statuses or ())}
    for name, value in (
        ("types", list(flt.types) if flt.types else None),
        ("instanceId", flt.instance_id),
        ("traceId", flt.trace_id),
        ("keyword", flt.keyword),
        ("fingerprint", flt.fingerprint),
        ("enqueuedBefore", flt.enqueued_before),
        ("enqueuedAfter", flt.enqueued_after),
        ("replayBatchId", flt.replay_batch_id),
    ):
        if value is not None:
            body[name] = value
    body[_FILTER_KEY[by]] = [key] if by == "type" else key
    return body


def _newest_members(flt: JobFilter, by: str, keys: list[Any], n: int) -> Any:
    """The ``n`` newest members of each cluster: one short index scan per key
    (``ORDER BY updated_at DESC, id DESC LIMIT n``), all in one statement."""
    column = GROUPINGS[by]
    parts = []
    for key in keys:
        member = flt.apply(
            select(
                column.label("key"),
                jobs.c.id,
                jobs.c.type,
                jobs.c.status,
                jobs.c.last_error,
                jobs.c.instance_id,
                jobs.c.trace_id,
                jobs.c.updated_at,
            )
        )
        member = member.where(column.is_(None) if key is None else column == key)
        member = member.order_by(jobs.c.updated_at.desc(), jobs.c.id.desc()).limit(n)
        parts.append(select(member.subquery()))
    return union_all(*parts)


async def failure_clusters(
    db: Database, flt: JobFilter, *, by: str = "reason", limit: int = 50, samples: int = 3
) -> list[dict[str, Any]]:
    """The largest ``limit`` clusters of dead/failed jobs matching ``flt``
    (largest first, then by key), each with ``samples`` newest members."""
    if by not in GROUPINGS:
        raise FlowledgerError(f"by must be one of {', '.join(GROUPINGS)}", field="by")
    if not 1 <= limit <= MAX_LIMIT:
        raise FlowledgerError(f"limit must be 1 to {MAX_LIMIT}", field="limit")
    if not 0 <= samples <= MAX_SAMPLES:
        raise FlowledgerError(f"samples must be 0 to {MAX_SAMPLES}", field="samples")
    statuses = tuple(s for s in (flt.statuses or CLUSTERED_STATUSES) if s in CLUSTERED_STATUSES)
    if not statuses:
        return []
    flt = replace(flt, statuses=statuses)
    key = GROUPINGS[by].label("key")
    count = func.count().label("n")
    groups = flt.apply(
        select(
            key,
            count,
            func.min(jobs.c.updated_at).label("first"),
            func.max(jobs.c.updated_at).label("last"),
        )
    ).group_by(key)
    async with db.read() as conn:
        top = (await conn.execute(groups.order_by(count.desc(), key).limit(limit))).all()
        keys = [row.key for row in top]
        if not keys:
            return []
        types = await conn.execute(
            flt.apply(select(key, jobs.c.type, func.count().label("n")))
            .where(_in_key(GROUPINGS[by], keys))
            .group_by(key, jobs.c.type)
        )
        by_type: dict[Any, list[dict[str, Any]]] = {}
        for row in types:
            by_type.setdefault(row.key, []).append({"type": row.type, "count": row.n})
        picked: dict[Any, list[Any]] = {}
        for row in await conn.execute(_newest_members(flt, by, keys, max(samples, 1))):
            picked.setdefault(row.key, []).append(row)
    clusters = []
    for row in top:
        members_of = picked.get(row.key, [])
        first_error = next((m.last_error for m in members_of if m.last_error), None)
        clusters.append(
            {
                "id": f"{by}:{row.key}",
                "by": by,
                "key": row.key,
                "pattern": None if first_error is None else normalize_error(first_error),
                "count": row.n,
                "firstSeenAt": row.first,
                "lastSeenAt": row.last,
                "types": sorted(by_type.get(row.key, []), key=lambda t: (-t["count"], t["type"])),
                "samples": [
                    {
                        "jobId": m.id,
                        "type": m.type,
                        "status": m.status,
                        "error": m.last_error,
                        "instanceId": m.instance_id,
                        "traceId": m.trace_id,
                        "updatedAt": m.updated_at,
                    }
                    for m in members_of[:samples]
                ],
                "filter": _filter_body(flt, by, row.key),
            }
        )
    return clusters
