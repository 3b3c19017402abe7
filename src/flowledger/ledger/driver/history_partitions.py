"""Maintenance of the partitioned attempts history on PostgreSQL (issue 34
items 1 and 2; the layout is :mod:`flowledger.db.history_partitions`):
creating the day partitions ahead, and retention's removal of a whole
partition once every one of its rows is past the policy. On SQLite, or on a
PostgreSQL table that is not partitioned, every function here is a no-op.

Creating ahead (:func:`partitions_ensure`): the partitions of today and the
next ``ahead_days`` UTC days that do not exist yet. A row whose day had no
partition went to ``DEFAULT``; PostgreSQL refuses a new partition whose
range holds rows of ``DEFAULT``, so those rows are first moved into the new
table, which is then ATTACHed (same transaction).

Retention (:func:`partition_drop_expired`): a partition is dropped only when
its whole range is before the cut-off and none of its rows belongs to a job
that retention must keep (pending, running, failed, dead, or of a protected
instance: :func:`~flowledger.ledger.driver.core_maintenance.purgeable_jobs`);
a partition holding one such row stays, and its purgeable rows go with
their jobs in the row-by-row batches. The check is one scan of the
partition (stopping at the first row to keep) with a primary-key probe of
its job per row; then ``DETACH PARTITION`` and ``DROP TABLE`` in the same
transaction, under ``lock_timeout`` (:data:`LOCK_TIMEOUT`): DETACH takes an
ACCESS EXCLUSIVE lock on the parent for the catalog change only, so claims
wait at most that long, and a detach that cannot get its lock in time is
given up (its partition is left to the row batches of this run and to the
next run). ``DETACH … CONCURRENTLY`` is not used: PostgreSQL refuses it while
the table has a ``DEFAULT`` partition, and it cannot run inside a
transaction, so the check and the drop could not be one unit; the
``DEFAULT`` partition is kept because it makes an insert never fail when the
partition service is behind.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

from sqlalchemy import column, exists, select, table
from sqlalchemy.exc import OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.history_partitions import (
    DEFAULT_PARTITION,
    IS_PARTITIONED_SQL,
    PARENT,
    PARTITIONS_SQL,
    bounds_sql,
    create_day_sql,
    day_partition,
    day_start,
)
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.driver.core_maintenance import purgeable_jobs

LOCK_TIMEOUT = "2s"  # the longest retention's detach makes claims wait
# the longest a partition's creation makes claims wait: it is created days
# ahead, so one that cannot get its lock at once is left to the next run
# (hourly) rather than queued — every claim and settlement queues behind a
# waiting ACCESS EXCLUSIVE request, and at a worker's start, behind its
# other services' reads, that held the first claims 2 s per day created
# (issue 34 item 4, measured on the volume database)
CREATE_LOCK_TIMEOUT = "50ms"


@dataclass(frozen=True)
class Partition:
    name: str
    low: datetime | None  # None: the DEFAULT partition
    high: datetime | None


@dataclass(frozen=True)
class DroppedPartition:
    name: str
    rows: int


async def is_partitioned(conn: AsyncConnection) -> bool:
    """True when ``workflow_job_executions`` is a partitioned table here."""
    if conn.dialect.name != "postgresql":
        return False
    return bool((await conn.exec_driver_sql(IS_PARTITIONED_SQL)).scalar_one())


async def partitions_list(conn: AsyncConnection) -> list[Partition]:
    """The partitions, oldest first, ``DEFAULT`` last (none on SQLite)."""
    if not await is_partitioned(conn):
        return []
    rows = (await conn.exec_driver_sql(PARTITIONS_SQL)).all()
    return [Partition(str(r.name), r.low, r.high) for r in rows]


async def _default_has_rows(conn: AsyncConnection, low: datetime, high: datetime) -> bool:
    found = await conn.exec_driver_sql(
        f"SELECT EXISTS (SELECT 1 FROM {DEFAULT_PARTITION} "
        "WHERE started_at >= %(low)s AND started_at < %(high)s)",
        {"low": low, "high": high},
    )
    return bool(found.scalar_one())


async def _create_day(conn: AsyncConnection, day: date) -> None:
    low = day_start(day)
    high = low + timedelta(days=1)
    if not await _default_has_rows(conn, low, high):
        await conn.exec_driver_sql(create_day_sql(day))
        return
    name = day_partition(day)
    await conn.exec_driver_sql(
        f"CREATE TABLE {name} (LIKE {PARENT} INCLUDING DEFAULTS INCLUDING CONSTRAINTS)"
    )
    await conn.exec_driver_sql(
        f"WITH moved AS (DELETE FROM {DEFAULT_PARTITION} "
        "WHERE started_at >= %(low)s AND started_at < %(high)s RETURNING *) "
        f"INSERT INTO {name} SELECT * FROM moved",
        {"low": low, "high": high},
    )
    await conn.exec_driver_sql(
        f"ALTER TABLE {PARENT} ATTACH PARTITION {name} {bounds_sql(low, high)}"
    )


async def partitions_ensure(conn: AsyncConnection, *, now: datetime, ahead_days: int) -> list[str]:
    """Create the missing day partitions of today (UTC, at ``now``) and the
    next ``ahead_days`` days, each in a savepoint of the caller's
    transaction under :data:`CREATE_LOCK_TIMEOUT` (one that cannot get its lock is
    tried again on the next call). Returns the names created. Days already
    inside another partition's range (the migrated ``…_legacy`` one) are
    skipped."""
    existing = await partitions_list(conn)
    if not existing:
        return []
    covered = [(p.low, p.high) for p in existing if p.low is not None and p.high is not None]
    created: list[str] = []
    today = now.astimezone(UTC).date()
    for offset in range(ahead_days + 1):
        day = today + timedelta(days=offset)
        low = day_start(day)
        high = low + timedelta(days=1)
        if any(lo < high and low < hi for lo, hi in covered):
            continue
        try:
            async with conn.begin_nested():
                await conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{CREATE_LOCK_TIMEOUT}'")
                await _create_day(conn, day)
        except OperationalError:
            continue
        created.append(day_partition(day))
        covered.append((low, high))
    return created


async def _keeps_a_row(conn: AsyncConnection, name: str, before: datetime) -> bool:
    """True when partition ``name`` holds an attempt of a job retention must keep."""
    part = table(name, column("job_id"))
    purgeable = exists().where(jobs.c.id == part.c.job_id, *purgeable_jobs(before))
    stmt = select(exists().select_from(part).where(~purgeable))
    return bool((await conn.execute(stmt)).scalar_one())


async def partition_drop_expired(
    conn: AsyncConnection, *, before: datetime, after: datetime | None
) -> tuple[datetime | None, DroppedPartition | None]:
    """Look at the next partition (by range, lower bound past ``after``)
    whose whole range is before ``before``; drop it when every row of it is
    past the policy. Returns (the cursor for the next call — None when no
    candidate is left —, the partition dropped or None)."""
    for part in await partitions_list(conn):
        if part.low is None or part.high is None or part.high > before:
            continue
        if after is not None and part.low <= after:
            continue
        if await _keeps_a_row(conn, part.name, before):
            return part.low, None
        rows = int((await conn.exec_driver_sql(f"SELECT count(*) FROM {part.name}")).scalar_one())
        try:
            async with conn.begin_nested():
                await conn.exec_driver_sql(f"SET LOCAL lock_timeout = '{LOCK_TIMEOUT}'")
                await conn.exec_driver_sql(f"ALTER TABLE {PARENT} DETACH PARTITION {part.name}")
                await conn.exec_driver_sql(f"DROP TABLE {part.name}")
        except OperationalError:
            return part.low, None
        return part.low, DroppedPartition(part.name, rows)
    return None, None
