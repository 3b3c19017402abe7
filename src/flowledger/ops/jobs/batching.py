"""The pieces shared by the operator's batch actions and replay (SPEC L-24):
limits, per-item outcomes, staggering, chunking, locking and replay batch
ids. The actions themselves live in :mod:`flowledger.ops.jobs.actions` and
:mod:`flowledger.ops.jobs.replay`; their module docs state the rules.

- **Staggering**: the k-th submitted job of a batch (k = 0, 1, …) gets
  ``run_at = now + k / rate`` seconds, so a batch is released at ``rate`` jobs
  per second (1 to 200, default 20) and never all at once. The estimated
  completion window is ``[now, now + submitted / rate]``: the span over which
  the batch becomes due at that rate (each job then adds its own run time).
- **Locks**: a chunk locks its instance rows, then its job rows, both in id
  order — the L-13 order, and one order for every caller so two batches
  cannot deadlock each other.
- **Outcomes**: ``submitted`` / ``skipped`` per job, the shared words of
  :mod:`flowledger.ops.batch` being ``done`` / ``skipped``; each batch is a
  recorded batch operation there (its id the replay batch id where there is
  one).
- **Replay batch id**: a uuid hex stored in ``workflow_jobs.replay_batch_id``
  on every job a batch retry or a replay submitted, so a console or the CLI
  can follow the batch.

Never imports the API or the CLI.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.engine.job_types import PAUSABLE_TYPES
from flowledger.errors import FlowledgerError, InvalidStateError
from flowledger.ledger.driver import LedgerDriver
from flowledger.ops import batch
from flowledger.ops.batch import DONE
from flowledger.ops.batch.pacing import MAX_RATE as MAX_RATE  # one rate bound for every batch
from flowledger.ops.batch.pacing import MIN_RATE as MIN_RATE
from flowledger.ops.batch.record import new_batch_id as new_batch_id  # re-exported
from flowledger.ops.jobs.filters import JobFilter

MAX_BATCH_IDS = 500
MAX_REPLAY = 500
CHUNK_SIZE = 100
DEFAULT_RATE = 20

SUBMITTED = "submitted"
SKIPPED = "skipped"


@dataclass(frozen=True)
class ItemOutcome:
    """What happened to one job of a batch."""

    id: int
    outcome: str  # "submitted" | "skipped"
    reason: str | None = None  # why it was skipped
    code: str | None = None  # "not_found" | "invalid_state" when skipped
    status: str | None = None  # the job's status when it was checked (None: not found)

    @property
    def result(self) -> str:
        """The shared word of every batch (:mod:`flowledger.ops.batch`)."""
        return DONE if self.outcome == SUBMITTED else SKIPPED

    def shared(self) -> batch.ItemOutcome:
        if self.outcome == SUBMITTED:
            return batch.done(self.id)
        return batch.skipped(self.id, self.reason or "", self.code)


@dataclass(frozen=True)
class BatchResult:
    """The outcome of a batch retry, batch skip or replay."""

    matched: int
    submitted: int
    skipped: int
    items: list[ItemOutcome] = field(default_factory=list)
    rate: int | None = None
    window_from: datetime | None = None
    window_to: datetime | None = None
    replay_batch_id: str | None = None
    batch_id: str | None = None  # the recorded batch operation (ops/batch)

    @property
    def counts(self) -> batch.Counts:
        return batch.Counts.of(item.shared() for item in self.items)

    @property
    def submitted_ids(self) -> list[int]:
        return [item.id for item in self.items if item.outcome == SUBMITTED]


def check_rate(rate: int) -> None:
    if not MIN_RATE <= rate <= MAX_RATE:
        raise FlowledgerError(
            f"rate must be {MIN_RATE} to {MAX_RATE} jobs per second", field="rate", rate=rate
        )


def staggered_run_at(now: datetime, k: int, rate: int) -> datetime:
    """When the k-th (0-based) submitted job of a batch becomes due."""
    return now + timedelta(microseconds=round(k * 1_000_000 / rate))


def completion_window(now: datetime, submitted: int, rate: int) -> tuple[datetime, datetime]:
    """From now until the batch's last ``1 / rate`` slot ends."""
    return now, now + timedelta(microseconds=round(submitted * 1_000_000 / rate))


def scope(tenants: Sequence[str] | None) -> tuple[str, ...] | None:
    """A caller's tenant list as the shared filter takes it (None: every tenant)."""
    return None if tenants is None else tuple(tenants)


def distinct_ids(ids: Iterable[int]) -> list[int]:
    """The requested ids, duplicates dropped, order kept; 1 to 500 of them."""
    unique = list(dict.fromkeys(int(i) for i in ids))
    if not unique:
        raise FlowledgerError("ids must name at least one job", field="ids")
    if len(unique) > MAX_BATCH_IDS:
        raise FlowledgerError(
            f"at most {MAX_BATCH_IDS} jobs per batch (got {len(unique)})", field="ids"
        )
    return unique


def chunks(ids: list[int]) -> Iterable[list[int]]:
    for start in range(0, len(ids), CHUNK_SIZE):
        yield ids[start : start + CHUNK_SIZE]


async def visible_rows(
    conn: AsyncConnection, ids: Sequence[int], tenants: tuple[str, ...] | None
) -> dict[int, Any]:
    """The listed jobs that exist within ``tenants`` (id, instance, status)."""
    query = JobFilter(tenants=tenants).apply(
        select(jobs.c.id, jobs.c.instance_id, jobs.c.status).where(jobs.c.id.in_(ids))
    )
    return {row.id: row for row in (await conn.execute(query)).all()}


async def lock_jobs(conn: AsyncConnection, rows: Iterable[Any]) -> None:
    """Lock the rows' instances, then the jobs themselves, each in id order."""
    rows = list(rows)
    instance_ids = sorted({r.instance_id for r in rows if r.instance_id is not None})
    if instance_ids:
        await conn.execute(
            select(instances.c.id)
            .where(instances.c.id.in_(instance_ids))
            .order_by(instances.c.id)
            .with_for_update()
        )
    if rows:
        await conn.execute(
            select(jobs.c.id)
            .where(jobs.c.id.in_([r.id for r in rows]))
            .order_by(jobs.c.id)
            .with_for_update()
        )


async def stamp_batch(
    conn: AsyncConnection, ledger: LedgerDriver, ids: list[int], batch_id: str | None
) -> None:
    """Record (or, with None, clear) the replay batch id of ``ids``."""
    await ledger.jobs_mark_replay_batch(conn, ids, batch_id)


def not_found_item(job_id: int) -> ItemOutcome:
    return ItemOutcome(job_id, SKIPPED, f"job {job_id} not found", "not_found")


def refused_item(job_id: int, exc: InvalidStateError) -> ItemOutcome:
    status = exc.details.get("status")
    return ItemOutcome(job_id, SKIPPED, exc.message, exc.code, None if status is None else status)


async def retry_checked(
    conn: AsyncConnection,
    ledger: LedgerDriver,
    job_id: int,
    *,
    now: datetime,
    payload: dict[str, Any] | None = None,
    run_at: datetime | None = None,
) -> None:
    """The ledger's manual retry, refused for a pausable job (L-18) whose
    instance is suspended: made pending now, it would run against the
    suspended instance, be skipped, and the wait it stands for would be lost.
    Callers hold the instance and job locks."""
    row = (
        await conn.execute(
            select(jobs.c.type, instances.c.status)
            .select_from(jobs.outerjoin(instances, instances.c.id == jobs.c.instance_id))
            .where(jobs.c.id == job_id)
        )
    ).first()
    if row is not None and row.type in PAUSABLE_TYPES and row.status == "suspended":
        raise InvalidStateError(
            f"job {job_id} belongs to a suspended instance; resume the instance first",
            field="status",
            status="suspended",
        )
    await ledger.job_retry(conn, job_id, now=now, payload=payload, run_at=run_at)
