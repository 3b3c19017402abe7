"""Read models of the job ledger (SPEC L-25): the job list with the shared
:class:`~flowledger.ops.jobs.filters.JobFilter` and keyset paging, counts by
type and status (estimates marked as such at volume), one job with every
attempt of every generation and the full chain of a traceId. The chain's
downloadable diagnostic bundle is :func:`flowledger.ops.diagnostics.bundle.chain_bundle`.

Every function is read-only (one short read transaction) and returns plain
dicts whose keys are already the API's camelCase names (``runAt``,
``lastError``; a job's ``tenant_id`` is ``tenant``) and whose times are aware
UTC datetimes, so the REST API and the CLI render the same objects (JSON:
``fastapi.encoders.jsonable_encoder``). A job's lease token is never shown.

Tenant scope (SPEC A-3): ``tenants=None`` sees every tenant; otherwise a job
of another tenant — or a system job without a tenant — is not found.

Indexes: the list is newest first by id (``pk_workflow_jobs`` backwards,
with the filter's own index where one is selective: ``…_status_type``,
``…_instance``, ``…_trace``, ``…_failure_clusters``, ``…_replay_batch``);
attempts come through ``ix_workflow_job_executions_job``.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import Column, Select, func, select, true, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.count_estimates import (
    GroupCounts,
    counts_by,
    estimated_rows,
    frequent_values,
)
from flowledger.db.database import Database
from flowledger.db.history_partitions import earliest_attempt_start
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import FlowledgerError, NotFoundError
from flowledger.ops.jobs.filters import JobFilter
from flowledger.states import JobStatus

MAX_LIST_LIMIT = 200
MAX_CHAIN_JOBS = 1000
LIST_ERROR_CHARS = 500  # a list shows the start of the last error; the detail shows it all

# Renamed on the way out (everything else is plain snake_case → camelCase).
_RENAMED = {"tenant_id": "tenant", "form_data": "form"}
_HIDDEN = frozenset({"lease_token"})
_LIST_HIDDEN = _HIDDEN | {"payload", "result"}


class CursorInvalid(FlowledgerError):
    """A ``cursor`` this list did not give out (422 on the field ``cursor``)."""

    code = "cursor_invalid"


def camel(name: str) -> str:
    """``last_error_code`` → ``lastErrorCode`` (and the few renames above)."""
    if name in _RENAMED:
        return _RENAMED[name]
    head, *rest = name.split("_")
    return head + "".join(part[:1].upper() + part[1:] for part in rest)


def camel_row(row: Any, hidden: frozenset[str] = _HIDDEN) -> dict[str, Any]:
    """One database row (mapping) as a camelCase dict without ``hidden`` keys."""
    return {camel(k): v for k, v in dict(row).items() if k not in hidden}


def _columns(hidden: frozenset[str]) -> list[Column[Any]]:
    return [c for c in jobs.c if c.name not in hidden]


def execution_public(row: Any) -> dict[str, Any]:
    """An attempt row, plus its queue delay (claim time - due time) in ms."""
    out = camel_row(row)
    delay = out["startedAt"] - out["scheduledAt"]
    out["queueDelayMs"] = round(delay.total_seconds() * 1000, 3)
    return out


# -------------------------------------------------------------------- cursors


def encode_cursor(job_id: int) -> str:
    """The same shape as every other list's cursor: base64url of ``[id]``."""
    raw = json.dumps([job_id], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str | None) -> int | None:
    if cursor is None:
        return None
    try:
        values = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    except (binascii.Error, ValueError):
        values = None
    if (
        not isinstance(values, list)
        or len(values) != 1
        or isinstance(values[0], bool)
        or not isinstance(values[0], int)
        or not 0 < values[0] < 2**63
    ):
        raise CursorInvalid("cursor is not a value this list gave out", field="cursor")
    return values[0]


# ---------------------------------------------------------------------- lists


async def list_jobs(
    db: Database, flt: JobFilter, *, limit: int = 50, cursor: str | None = None
) -> dict[str, Any]:
    """Jobs matching ``flt``, newest first (by id), at most ``limit`` (1-200)
    per page; ``next`` continues after the page's last job, so jobs added
    meanwhile never shift a page."""
    if not 1 <= limit <= MAX_LIST_LIMIT:
        raise FlowledgerError(f"limit must be 1 to {MAX_LIST_LIMIT}", field="limit")
    after = decode_cursor(cursor)
    query = flt.apply(select(*_columns(_LIST_HIDDEN)))
    if after is not None:
        query = query.where(jobs.c.id < after)
    query = query.order_by(jobs.c.id.desc()).limit(limit + 1)
    async with db.read() as conn:
        rows: Sequence[Any] = []
        if flt.keyword:
            rows = (await conn.execute(_recent_keyword_page(flt, after, limit))).mappings().all()
        if len(rows) <= limit:  # not enough in the recent window: the trigram path
            rows = (await conn.execute(query)).mappings().all()
    items = [camel_row(r, _LIST_HIDDEN) for r in rows[:limit]]
    for item in items:
        if item["lastError"] is not None and len(item["lastError"]) > LIST_ERROR_CHARS:
            item["lastError"] = item["lastError"][:LIST_ERROR_CHARS] + "…"
    more = len(rows) > limit
    return {"items": items, "next": encode_cursor(items[-1]["id"]) if more else None}


# how many of the newest jobs (matching every filter but the keyword) the
# keyword page looks at first (issue 17 item 7)
KEYWORD_WINDOW = 5000


def _recent_keyword_page(flt: JobFilter, after: int | None, limit: int) -> Any:
    """The page of a keyword search, looked for among the newest
    ``KEYWORD_WINDOW`` jobs that match the other filters: an id-descending
    walk of the primary key with a LIMIT, then the keyword over that window
    (a LIMIT subquery, so PostgreSQL does not push the keyword into the walk
    and choose the trigram index). When the window holds ``limit + 1``
    matches they are exactly the newest ones (every job outside the window is
    older than all of it), so a broad keyword costs one short walk instead of
    sorting all its matches; with fewer, the caller runs the trigram query."""
    inner = replace(flt, keyword=None).apply(select(*_columns(_LIST_HIDDEN)))
    if after is not None:
        inner = inner.where(jobs.c.id < after)
    window = inner.order_by(jobs.c.id.desc()).limit(KEYWORD_WINDOW).subquery("recent")
    return (
        select(window)
        .where(flt.keyword_match(window.c.last_error, window.c.type))
        .order_by(window.c.id.desc())
        .limit(limit + 1)
    )


@dataclass(frozen=True)
class TypeStatusCounts:
    """Jobs per status and per (type, status); ``estimated`` names the
    statuses whose overall figure is the planner's estimate, ``estimated_by_type``
    the (type → statuses) cells that are."""

    overall: GroupCounts
    by_type: dict[str, dict[str, int]]
    estimated_by_type: dict[str, frozenset[str]]

    @property
    def estimated(self) -> list[str]:
        return sorted(self.overall.estimated)


async def type_status_counts(
    conn: AsyncConnection, rows: Select[Any], *, types: Sequence[str] | None = None
) -> TypeStatusCounts:
    """How many of ``rows`` (a filtered ``SELECT`` of jobs) are in each status,
    and in each status per type (types with no job left out). A status whose
    exact count would read millions of rows (``succeeded`` after months of
    history) is the planner's estimate; its per-type cells are counted where
    small and estimated otherwise (:func:`_split_by_type`), over the types in
    the planner's statistics (restricted to ``types`` when given) — see
    :mod:`flowledger.db.count_estimates` (issue 34 item 3)."""
    statuses = [s.value for s in JobStatus]
    overall = await counts_by(conn, rows, jobs.c.status, statuses)
    exact = [s for s in statuses if s not in overall.estimated]
    by_type: dict[str, dict[str, int]] = {}
    if exact:
        grouped = (
            rows.with_only_columns(jobs.c.type, jobs.c.status, func.count())
            .where(jobs.c.status.in_(exact))
            .group_by(jobs.c.type, jobs.c.status)
        )
        for job_type, status, count in (await conn.execute(grouped)).all():
            by_type.setdefault(job_type, dict.fromkeys(statuses, 0))[status] = int(count)
    rough: dict[str, set[str]] = {}
    if overall.estimated:
        for (job_type, status), (n, guessed) in (
            await _split_by_type(conn, rows, overall, by_type, types)
        ).items():
            if n:
                by_type.setdefault(job_type, dict.fromkeys(statuses, 0))[status] = n
            if n and guessed:
                rough.setdefault(job_type, set()).add(status)
    return TypeStatusCounts(
        overall, dict(sorted(by_type.items())), {t: frozenset(v) for t, v in rough.items()}
    )


# a (type, status) cell of an estimated status expected to hold at most this
# many rows is counted: ~1,000 heap pages at worst, tens of ms from the OS cache
SMALL_CELL = 1_000


async def _split_by_type(
    conn: AsyncConnection,
    rows: Select[Any],
    overall: GroupCounts,
    seen: dict[str, dict[str, int]],
    types: Sequence[str] | None,
) -> dict[tuple[str, str], tuple[int, bool]]:
    """Each estimated status split by type: the status's estimate times the
    type's share of the matching rows (how the planner itself estimates the
    pair), over the types seen or in the planner's statistics; a cell
    expected to hold at most :data:`SMALL_CELL` rows is counted instead —
    all of them in one ``GROUP BY`` (so a type that has none of a status
    shows 0, not the planner's guess). One ``EXPLAIN`` per type."""
    known = set(seen) | set(await frequent_values(conn, jobs.c.type))
    known_types = sorted(t for t in known if types is None or t in types)
    matched = max(await estimated_rows(conn, rows), 1)
    share = {
        t: await estimated_rows(conn, rows.where(jobs.c.type == t)) / matched for t in known_types
    }
    guesses = {
        (t, s): round(overall.counts[s] * share[t]) for t in known_types for s in overall.estimated
    }
    small = [cell for cell, guess in guesses.items() if guess <= SMALL_CELL]
    counted: dict[tuple[str, str], int] = {}
    if small:
        # per type ``type = t AND status IN (…)``: each an index-only range of
        # ix_workflow_jobs_status_type; one ``(type, status) IN (pairs)`` was
        # planned as a bitmap heap scan, one heap page per row — 206 ms on
        # the volume database for two cells the planner thought near empty
        # that held 21,559 jobs (27 ms this way)
        statuses_of: dict[str, list[str]] = {}
        for t, st in small:
            statuses_of.setdefault(t, []).append(st)
        parts = [
            rows.with_only_columns(jobs.c.type, jobs.c.status, func.count())
            .where(jobs.c.type == t, jobs.c.status.in_(sts))
            .group_by(jobs.c.type, jobs.c.status)
            for t, sts in statuses_of.items()
        ]
        grouped = parts[0] if len(parts) == 1 else union_all(*parts)
        counted = {(t, st): int(n) for t, st, n in (await conn.execute(grouped)).all()}
    return {
        cell: (counted.get(cell, 0), False) if cell in small else (guess, True)
        for cell, guess in guesses.items()
    }


async def job_summary(db: Database, flt: JobFilter) -> dict[str, Any]:
    """Counts of the jobs matching ``flt`` by status and by type and status
    (every status is present, zeros included; types sorted by name). A figure
    that is the planner's estimate is named in ``estimatedStatuses`` — at the
    top and in each type's row — with ``estimated`` true
    (:func:`type_status_counts`)."""
    async with db.read() as conn:
        found = await type_status_counts(conn, flt.apply(select(jobs.c.id)), types=flt.types)
    return {
        "total": found.overall.total,
        "byStatus": found.overall.counts,
        "estimated": bool(found.estimated),
        "estimatedStatuses": found.estimated,
        "byType": [
            {
                "type": t,
                "total": sum(counts.values()),
                "byStatus": counts,
                "estimatedStatuses": sorted(found.estimated_by_type.get(t, ())),
            }
            for t, counts in found.by_type.items()
        ],
    }


# ------------------------------------------------------------ detail, chains


def attempts_of(job_ids: Sequence[int], *, created_since: datetime | None) -> Select[Any]:
    """The attempts of ``job_ids``, oldest first per job. ``created_since``:
    the earliest ``created_at`` of those jobs, when known — it bounds
    ``started_at`` by a value so PostgreSQL plans only the attempts' day
    partitions since then
    (:func:`~flowledger.db.history_partitions.earliest_attempt_start`)."""
    since = (
        executions.c.started_at >= earliest_attempt_start(created_since)
        if created_since is not None
        else true()
    )
    return (
        select(executions)
        .where(executions.c.job_id.in_(list(job_ids)), since)
        .order_by(
            executions.c.job_id,
            executions.c.generation,
            executions.c.attempt,
            executions.c.id,
        )
    )


async def executions_by_job(
    conn: AsyncConnection, job_ids: Sequence[int], *, created_since: datetime | None
) -> dict[int, list[Any]]:
    """Every attempt of ``job_ids`` by job, oldest first (generation, attempt),
    read by :func:`attempts_of` 500 jobs at a time."""
    out: dict[int, list[Any]] = {job_id: [] for job_id in job_ids}
    for offset in range(0, len(job_ids), 500):
        chunk = job_ids[offset : offset + 500]
        rows = await conn.execute(attempts_of(chunk, created_since=created_since))
        for row in rows.mappings():
            out[row["job_id"]].append(execution_public(row))
    return out


def _scoped(query: Any, tenants: Iterable[str] | None) -> Any:
    return JobFilter(tenants=None if tenants is None else tuple(tenants)).apply(query)


async def job_detail(
    db: Database, job_id: int, *, tenants: tuple[str, ...] | None
) -> dict[str, Any]:
    """One job (payload and result included) with ``executions``: every attempt
    of every generation, oldest first. NotFoundError when it does not exist
    or belongs to a tenant outside ``tenants``."""
    async with db.read() as conn:
        row = (
            (
                await conn.execute(
                    _scoped(select(*_columns(_HIDDEN)), tenants).where(jobs.c.id == job_id)
                )
            )
            .mappings()
            .first()
        )
        if row is None:
            raise NotFoundError(f"job {job_id} not found", field="jobId")
        job = camel_row(row)
        attempts = await executions_by_job(conn, [job_id], created_since=row["created_at"])
        job["executions"] = attempts[job_id]
    return job


async def read_chain(
    conn: AsyncConnection, trace_id: str, tenants: tuple[str, ...] | None
) -> dict[str, Any]:
    """The chain of :func:`job_chain` inside the caller's read transaction."""
    query = (
        _scoped(select(*_columns(_HIDDEN)), tenants)
        .where(jobs.c.trace_id == trace_id)
        .order_by(jobs.c.id)
        .limit(MAX_CHAIN_JOBS + 1)
    )
    rows = (await conn.execute(query)).mappings().all()
    if not rows:
        raise NotFoundError(f"no job with traceId {trace_id!r}", field="traceId")
    chain = [camel_row(r) for r in rows[:MAX_CHAIN_JOBS]]
    attempts = await executions_by_job(
        conn, [j["id"] for j in chain], created_since=min(j["createdAt"] for j in chain)
    )
    for job in chain:
        job["executions"] = attempts[job["id"]]
    instance_ids = sorted({j["instanceId"] for j in chain if j["instanceId"] is not None})
    return {
        "traceId": trace_id,
        "jobs": chain,
        "instanceIds": instance_ids,
        "truncated": len(rows) > MAX_CHAIN_JOBS,
    }


async def job_chain(
    db: Database, trace_id: str, *, tenants: tuple[str, ...] | None
) -> dict[str, Any]:
    """Every visible job of ``trace_id`` (oldest first, at most 1,000; then
    ``truncated``) with its attempts, and the instances they belong to.
    NotFoundError when no visible job carries the traceId."""
    async with db.read() as conn:
        return await read_chain(conn, trace_id, tenants)
