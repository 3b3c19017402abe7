"""Conditional replay of dead and failed jobs (SPEC L-24), with its preview
and the progress of a replay batch.

A replay takes the jobs a :class:`JobFilter` matches (type, instance,
traceId, error keyword, failure-cluster fingerprint, age since enqueue —
入库时长 — and tenants), limited to ``dead`` and ``failed`` (both unless the
filter names one of them; any other status is an error naming
``statuses``). It selects at most ``limit`` (1 to 500, default 500) oldest
first (``created_at, id``), retries each through
the ledger driver's ``job_retry`` staggered at ``rate`` per
second, and stamps them with a new replay batch id.

Selection and retry run together in one transaction per chunk of at most
100 jobs (keyset-paged on ``created_at, id``), so a crash midway leaves only
whole chunks submitted. ``matched`` is the filter's total when the replay
started (it may exceed ``limit``); ``skipped`` counts selected jobs whose
state changed before their chunk locked them (a concurrent retry or skip).

The replay is a recorded batch operation of :mod:`flowledger.ops.batch`
(kind ``job.replay``, its id the replay batch id), its progress written
after each chunk; ``submitted`` / ``skipped`` are its ``done`` / ``skipped``.

Never imports the API or the CLI.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from sqlalchemy import and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.count_estimates import count_up_to
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.engine.tasks import SYSTEM as SYSTEM_ACTOR
from flowledger.errors import FlowledgerError, InvalidStateError
from flowledger.ledger.driver import ledger_driver
from flowledger.ops.batch import BatchRecorder
from flowledger.ops.jobs.batching import (
    CHUNK_SIZE,
    DEFAULT_RATE,
    MAX_REPLAY,
    SUBMITTED,
    BatchResult,
    ItemOutcome,
    check_rate,
    completion_window,
    lock_jobs,
    new_batch_id,
    refused_item,
    retry_checked,
    scope,
    staggered_run_at,
    stamp_batch,
)
from flowledger.ops.jobs.filters import JobFilter
from flowledger.states import JobStatus

REPLAYABLE_STATUSES = (JobStatus.DEAD.value, JobStatus.FAILED.value)
PREVIEW_SAMPLES = 10

_KEY_COLUMNS = (jobs.c.id, jobs.c.instance_id, jobs.c.created_at)
_SAMPLE_COLUMNS = (jobs.c.id, jobs.c.type, jobs.c.status, jobs.c.last_error, jobs.c.created_at)


@dataclass(frozen=True)
class ReplayPreview:
    """``matched`` is exact up to ``limit``; beyond it, on PostgreSQL, the
    planner's estimate (``matched_estimated``) — ``would_submit`` is exact
    either way."""

    matched: int
    would_submit: int
    samples: list[dict[str, Any]]  # id, type, status, last_error, created_at
    matched_estimated: bool = False


def replayable(flt: JobFilter) -> JobFilter:
    """``flt`` limited to dead / failed jobs (both when it names no status)."""
    if not flt.statuses:
        return replace(flt, statuses=REPLAYABLE_STATUSES)
    wrong = sorted(set(flt.statuses) - set(REPLAYABLE_STATUSES))
    if wrong:
        raise FlowledgerError(
            f"only dead or failed jobs can be replayed, not {', '.join(wrong)}",
            field="statuses",
        )
    return replace(flt, statuses=tuple(dict.fromkeys(flt.statuses)))


def _check_limit(limit: int) -> None:
    if not 1 <= limit <= MAX_REPLAY:
        raise FlowledgerError(f"limit must be 1 to {MAX_REPLAY}", field="limit", limit=limit)


def _oldest_first(query: Any) -> Any:
    return query.order_by(jobs.c.created_at, jobs.c.id)


async def _count(conn: AsyncConnection, flt: JobFilter) -> int:
    query = flt.apply(select(func.count()).select_from(jobs))
    return int((await conn.execute(query)).scalar_one())


async def replay_preview(db: Database, flt: JobFilter, *, limit: int = MAX_REPLAY) -> ReplayPreview:
    """How many jobs a replay with this filter matches and would submit, and
    the first ones it would take (oldest first, at most 10, through
    ``ix_workflow_jobs_replayable``)."""
    flt = replayable(flt)
    _check_limit(limit)
    matching = flt.apply(select(jobs.c.id))
    async with db.read() as conn:
        # exact up to the limit (what a replay would submit); past it, at
        # volume, the planner's estimate (issue 34 item 3)
        matched, rough = await count_up_to(conn, matching, limit)
        query = _oldest_first(flt.apply(select(*_SAMPLE_COLUMNS)))
        rows = (await conn.execute(query.limit(min(PREVIEW_SAMPLES, limit)))).all()
    return ReplayPreview(
        matched=matched,
        would_submit=min(matched, limit),
        samples=[dict(r._mapping) for r in rows],
        matched_estimated=rough,
    )


def _after(query: Any, key: tuple[datetime, int] | None) -> Any:
    """Keyset paging: the rows after ``key`` in oldest-first order."""
    if key is None:
        return query
    created_at, job_id = key
    return query.where(
        or_(
            jobs.c.created_at > created_at,
            and_(jobs.c.created_at == created_at, jobs.c.id > job_id),
        )
    )


async def replay(
    db: Database,
    flt: JobFilter,
    *,
    now: datetime,
    limit: int = MAX_REPLAY,
    rate: int = DEFAULT_RATE,
    replay_batch_id: str | None = None,
    actor: str = SYSTEM_ACTOR,
    reason: str | None = None,
) -> BatchResult:
    """Retry at most ``limit`` dead / failed jobs matching ``flt``, oldest
    first, staggered at ``rate`` per second, under one replay batch id
    (``replay_batch_id``, or a new one)."""
    flt = replayable(flt)
    _check_limit(limit)
    check_rate(rate)
    batch_id = replay_batch_id or new_batch_id()
    ledger = ledger_driver(db)
    recorder = BatchRecorder(
        db,
        "job.replay",
        actor=actor,
        clock=lambda: now,
        reason=reason,
        tenants=flt.tenants,
        request={"limit": limit, "rate": rate, "statuses": list(flt.statuses or ())},
        batch_id=batch_id,
    )
    matched: int | None = None
    after: tuple[datetime, int] | None = None
    items: list[ItemOutcome] = []
    submitted = selected = 0
    await recorder.start(0)
    try:
        while selected < limit:
            size = min(CHUNK_SIZE, limit - selected)
            async with db.begin() as conn:
                if matched is None:
                    matched = await _count(conn, flt)
                    recorder.total = min(matched, limit)
                query = _after(flt.apply(select(*_KEY_COLUMNS)), after)
                rows = (await conn.execute(_oldest_first(query).limit(size))).all()
                await lock_jobs(conn, rows)
                done: list[int] = []
                for row in rows:
                    try:
                        run_at = staggered_run_at(now, submitted + len(done), rate)
                        await retry_checked(conn, ledger, row.id, now=now, run_at=run_at)
                    except InvalidStateError as exc:
                        items.append(refused_item(row.id, exc))
                        continue
                    done.append(row.id)
                    items.append(ItemOutcome(row.id, SUBMITTED))
                await stamp_batch(conn, ledger, done, batch_id)
            submitted += len(done)
            selected += len(rows)
            await recorder.progress([item.shared() for item in items])
            if len(rows) < size:
                break
            after = (rows[-1].created_at, rows[-1].id)
    except BaseException as exc:
        await recorder.fail([item.shared() for item in items], exc)
        raise
    recorder.total = len(items)
    await recorder.finish([item.shared() for item in items])
    start, end = completion_window(now, submitted, rate)
    return BatchResult(
        matched=matched or 0,
        submitted=submitted,
        skipped=selected - submitted,
        items=items,
        rate=rate,
        window_from=start,
        window_to=end,
        replay_batch_id=batch_id,
        batch_id=recorder.id,
    )


async def batch_progress(
    db: Database, replay_batch_id: str, *, tenants: Sequence[str] | None = None
) -> dict[str, int]:
    """Job counts by status of one replay batch (what a follower polls)."""
    flt = JobFilter(replay_batch_id=replay_batch_id, tenants=scope(tenants))
    query = flt.apply(select(jobs.c.status, func.count()).select_from(jobs))
    async with db.read() as conn:
        rows = (await conn.execute(query.group_by(jobs.c.status))).all()
    return {str(status): int(n) for status, n in rows}
