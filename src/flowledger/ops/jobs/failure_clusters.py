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
short backward scan; the reason clusters' group-by reads the narrower
``ix_workflow_jobs_failure_groups`` (fingerprint, type) in its order instead
(0027: 68 → 34 ms over 251,264 failed jobs); for type clusters ``…_failure_types`` (type,
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

from dataclasses import dataclass, replace
from typing import Any

from sqlalchemy import func, or_, select, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

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
# groupings with few distinct keys, read in one pass (:func:`_groups_in_one_pass`)
FEW_KEYS = frozenset({"reason", "type"})
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


@dataclass(frozen=True)
class _Group:
    key: Any
    n: int
    first: Any
    last: Any


def _largest(groups: list[_Group], limit: int) -> list[_Group]:
    """Largest first, then by key (a null key last)."""
    return sorted(groups, key=lambda g: (-g.n, g.key is None, g.key if g.key is not None else 0))[
        :limit
    ]


async def _groups_in_one_pass(
    conn: AsyncConnection, flt: JobFilter, by: str, limit: int
) -> tuple[list[_Group], dict[Any, list[dict[str, Any]]]]:
    """Reasons and types are few: one scan grouped by (key, type) gives both
    the clusters and their types (the failed part of the ledger read once,
    not once for the clusters and again for their types: 251,264 failed
    jobs on the volume benchmark)."""
    key = GROUPINGS[by].label("key")
    rows = await conn.execute(
        flt.apply(
            select(
                key,
                jobs.c.type,
                func.count().label("n"),
                func.min(jobs.c.updated_at).label("first"),
                func.max(jobs.c.updated_at).label("last"),
            )
        ).group_by(key, jobs.c.type)
    )
    merged: dict[Any, _Group] = {}
    by_type: dict[Any, list[dict[str, Any]]] = {}
    for row in rows:
        have = merged.get(row.key)
        merged[row.key] = (
            _Group(row.key, row.n, row.first, row.last)
            if have is None
            else _Group(
                row.key, have.n + row.n, min(have.first, row.first), max(have.last, row.last)
            )
        )
        by_type.setdefault(row.key, []).append({"type": row.type, "count": row.n})
    return _largest(list(merged.values()), limit), by_type


async def _largest_groups(
    conn: AsyncConnection, flt: JobFilter, by: str, limit: int
) -> tuple[list[_Group], dict[Any, list[dict[str, Any]]]]:
    """Instances and traces are many: the ``limit`` largest groups first,
    then the types of those alone (by the instance / trace index)."""
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
    top = [
        _Group(row.key, row.n, row.first, row.last)
        for row in await conn.execute(groups.order_by(count.desc(), key).limit(limit))
    ]
    by_type: dict[Any, list[dict[str, Any]]] = {}
    if top:
        types = await conn.execute(
            flt.apply(select(key, jobs.c.type, func.count().label("n")))
            .where(_in_key(GROUPINGS[by], [g.key for g in top]))
            .group_by(key, jobs.c.type)
        )
        for row in types:
            by_type.setdefault(row.key, []).append({"type": row.type, "count": row.n})
    return top, by_type


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
    async with db.read() as conn:
        if by in FEW_KEYS:
            top, by_type = await _groups_in_one_pass(conn, flt, by, limit)
        else:
            top, by_type = await _largest_groups(conn, flt, by, limit)
        keys = [group.key for group in top]
        if not keys:
            return []
        picked: dict[Any, list[Any]] = {}
        for member in await conn.execute(_newest_members(flt, by, keys, max(samples, 1))):
            picked.setdefault(member.key, []).append(member)
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
