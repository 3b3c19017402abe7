"""The partitioned attempts history (issue 34 items 1 and 2; SPEC L-9, L-14,
O-20), on both backends: on PostgreSQL ``workflow_job_executions`` has a day
partition per UTC day, created ahead by the ``history-partitions`` service
(rows that went to ``DEFAULT`` are moved into the new partition), attempts
of different days settle by batch, one by one and with their receipt, and
retention drops a partition whose every row is past the policy while it
keeps one that holds an attempt of a job it must keep (its expired rows go
row by row); on SQLite the same calls leave the one plain table alone and
retention removes the same rows row by row."""

from __future__ import annotations

import json
import time
from datetime import UTC, datetime, timedelta

import psycopg
from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.count_estimates import Explain
from flowledger.db.database import Database
from flowledger.db.history_partitions import DEFAULT_PARTITION, day_partition
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.urls import libpq_conninfo
from flowledger.handlers.partition_service import HistoryPartitions
from flowledger.ledger.driver.history_partitions import partitions_ensure, partitions_list
from flowledger.ledger.models import Outcome, OutcomeKind
from flowledger.ops.jobs.queries import attempts_of, executions_by_job
from flowledger.ops.retention import runs as ops
from tests.integration.ledger_helpers import add_job, attempt_rows, claim_one, settle_batch
from tests.ledger_access import ledger_of
from tests.ops.rows import add_execution
from tests.ops.rows import add_job as add_job_row

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
D = timedelta(days=1)


async def _names(db: Database) -> list[str]:
    async with db.read() as conn:
        return [p.name for p in await partitions_list(conn)]


async def _ensure(db: Database, now: datetime, ahead_days: int) -> list[str]:
    async with db.begin() as conn:
        return await partitions_ensure(conn, now=now, ahead_days=ahead_days)


async def _rows_in(db: Database, name: str) -> int:
    async with db.read() as conn:
        return int((await conn.exec_driver_sql(f"SELECT count(*) FROM {name}")).scalar_one())


async def test_the_service_creates_day_partitions_ahead(db: Database, clock: ManualClock) -> None:
    clock.set(NOW)
    job = await add_job_row(db, NOW, status="succeeded")
    # an attempt of a day without a partition yet lands in DEFAULT
    stray = await add_execution(db, job, scheduled_at=NOW + 4 * D, started_at=NOW + 4 * D)
    service = HistoryPartitions(db, clock, interval_s=60, ahead_days=3, holder="node-a")
    created = await service.ensure_once()
    if db.is_sqlite:
        assert created == [] and await _names(db) == []
        return
    days = [day_partition((NOW + i * D).date()) for i in range(4)]
    assert created == days
    assert await _names(db) == [*days, DEFAULT_PARTITION]
    assert await service.ensure_once() == []  # nothing missing
    clock.set(NOW + D)  # the next day: one more partition, the stray row moved into it
    fifth = day_partition((NOW + 4 * D).date())
    assert await service.ensure_once() == [fifth]
    assert await _rows_in(db, fifth) == 1 and await _rows_in(db, DEFAULT_PARTITION) == 0
    async with db.read() as conn:
        assert (
            await conn.execute(select(executions.c.id).where(executions.c.id == stray))
        ).scalar_one() == stray


async def test_attempts_of_different_days_settle(db: Database) -> None:
    """Claimed on three days, each attempt in its own partition; settled by
    batch, alone, and with a receipt in one statement, each finds its row."""
    await _ensure(db, NOW, 3)
    ids = [await add_job(db, NOW) for _ in range(4)]
    claimed = [await claim_one(db, NOW + i * D) for i in range(3)]
    later = NOW + 3 * D
    fourth = await claim_one(db, later)
    assert {c.id for c in (*claimed, fourth)} == set(ids)
    if not db.is_sqlite:
        for i, job in enumerate(claimed):
            name = day_partition((NOW + i * D).date())
            assert await _rows_in(db, name) == 1
            assert job.fence.execution_started_at == NOW + i * D
    done = Outcome(OutcomeKind.SUCCESS, result={"ok": True})
    assert await settle_batch(db, [(claimed[0], done), (claimed[1], done)], later) == {
        claimed[0].id,
        claimed[1].id,
    }
    async with db.begin() as conn:
        ledger = ledger_of(conn)
        assert await ledger.job_settle(
            conn,
            claimed[2].fence,
            Outcome(OutcomeKind.RETRY, error="boom"),
            now=later,
            started_at=claimed[2].started_at,
        )
        assert await ledger.receipt_put_and_settle(
            conn, fourth.fence, fourth.operation_key, "step", {"r": 1}, done, now=later
        )
    for job, status in ((claimed[0], "succeeded"), (claimed[1], "succeeded")):
        [attempt] = await attempt_rows(db, job.id)
        assert (attempt.status, attempt.finished_at) == (status, later)
    [failed] = await attempt_rows(db, claimed[2].id)
    assert (failed.status, failed.error) == ("failed", "boom")
    [receipted] = await attempt_rows(db, fourth.id)
    assert receipted.status == "succeeded"


async def test_retention_drops_a_whole_expired_partition_and_keeps_a_partial_one(
    db: Database,
) -> None:
    old, partial = NOW - 60 * D, NOW - 59 * D
    await _ensure(db, old, 1)  # the partitions of those two days
    done = [await add_job_row(db, old, status="succeeded", updated_at=partial) for _ in range(3)]
    for job in done:
        await add_execution(db, job, scheduled_at=old, started_at=old + timedelta(hours=1))
    dead = await add_job_row(db, old, status="dead", updated_at=partial)
    await add_execution(db, dead, scheduled_at=partial, started_at=partial, status="failed")
    await add_execution(db, done[0], scheduled_at=partial, started_at=partial, attempt=2)
    preview = await ops.preview(db, now=NOW, policies=["workflow_jobs"])
    run = await ops.run_retention(
        db, now=NOW, trigger="manual", actor="test", policies=["workflow_jobs"]
    )
    [item] = run["items"]
    assert item["tables"] == preview["items"][0]["tables"]
    assert item["tables"]["workflow_job_executions"] == 4
    assert item["tables"]["workflow_jobs"] == 3
    async with db.read() as conn:
        left = (await conn.execute(select(executions.c.job_id))).scalars().all()
    assert left == [dead]  # the dead job's attempt is kept
    if db.is_sqlite:
        assert item["partitionsDropped"] == run["partitionsDropped"] == 0
        return
    assert item["partitionsDropped"] == run["partitionsDropped"] == 1
    names = await _names(db)
    assert day_partition(old.date()) not in names
    assert day_partition(partial.date()) in names
    listed = await ops.list_runs(db, limit=1)
    assert listed[0]["partitionsDropped"] == 1


async def test_a_partition_whose_detach_would_wait_is_left_to_the_row_batches(
    db: Database,
) -> None:
    """DETACH waits at most ``lock_timeout`` (2 s) for its lock on the parent
    (a long reader holds it here): the run goes on, the expired attempts go
    row by row, the partition stays for the next run."""
    old = NOW - 60 * D
    await _ensure(db, old, 0)
    job = await add_job_row(db, old, status="succeeded", updated_at=old)
    await add_execution(db, job, scheduled_at=old, started_at=old)
    if db.is_sqlite:
        run = await ops.run_retention(
            db, now=NOW, trigger="manual", actor="test", policies=["workflow_jobs"]
        )
        assert run["items"][0]["tables"]["workflow_job_executions"] == 1
        return
    with psycopg.connect(libpq_conninfo(db.engine.url)) as reader:
        reader.execute("LOCK TABLE workflow_job_executions IN ACCESS SHARE MODE")
        run = await ops.run_retention(
            db, now=NOW, trigger="manual", actor="test", policies=["workflow_jobs"]
        )
        reader.rollback()
    [item] = run["items"]
    assert run["status"] == "succeeded" and item["partitionsDropped"] == 0
    assert item["tables"]["workflow_job_executions"] == 1
    assert day_partition(old.date()) in await _names(db)
    assert await _rows_in(db, day_partition(old.date())) == 0


async def test_a_partition_whose_creation_would_wait_is_left_to_the_next_run(
    db: Database,
) -> None:
    """Creating a day ahead never queues for its lock on the parent (a
    waiting ACCESS EXCLUSIVE request holds every claim and settlement behind
    it; issue 34 item 4): with a reader holding the parent, the days are
    given up at once — 2 s each before — and created by the next run."""
    await _ensure(db, NOW, 0)
    if db.is_sqlite:
        return
    with psycopg.connect(libpq_conninfo(db.engine.url)) as reader:
        reader.execute("LOCK TABLE workflow_job_executions IN ACCESS SHARE MODE")
        started = time.monotonic()
        assert await _ensure(db, NOW, 3) == []
        assert time.monotonic() - started < 1.5
        reader.rollback()
    assert await _ensure(db, NOW, 3) == [day_partition((NOW + i * D).date()) for i in (1, 2, 3)]


async def test_the_attempts_of_known_jobs_are_read_from_their_days_partitions_only(
    db: Database,
) -> None:
    """Issue 34 item 3: a read of known jobs' attempts bounds ``started_at``
    by the jobs' earliest ``created_at`` less the clock margin, so on
    PostgreSQL the plan holds the day partitions since then and not the
    older ones (planning every partition of 90 days cost the drawer 25-45 ms
    a statement); on both backends it returns every attempt of the jobs."""
    old_day, new_day = NOW - 10 * D, NOW
    if not db.is_sqlite:
        await _ensure(db, old_day, ahead_days=12)
    old = await add_job_row(db, old_day, status="succeeded")
    new = await add_job_row(db, new_day, status="succeeded")
    await add_execution(db, old, scheduled_at=old_day, started_at=old_day)
    mine = await add_execution(db, new, scheduled_at=new_day, started_at=new_day + D / 2)
    async with db.read() as conn:
        found = await executions_by_job(conn, [new], created_since=new_day)
        assert [a["id"] for a in found[new]] == [mine]
        if db.is_sqlite:
            return
        raw = (await conn.execute(Explain(attempts_of([new], created_since=new_day)))).scalar_one()
        plan = raw if isinstance(raw, str) else json.dumps(raw)
    assert day_partition(new_day.date()) in plan
    assert day_partition(old_day.date()) not in plan
    assert day_partition((new_day - 2 * D).date()) not in plan  # beyond the 1-day margin
