"""A retention run over 200k rows (100k succeeded jobs, each with one
attempt) never holds a lock longer than one batch (SPEC O-20), on SQLite and
PostgreSQL: every batch of 1,000 jobs is its own committed transaction (an
observer on another connection sees the count fall step by step while the
run is going), and a concurrent writer that keeps updating jobs of the very
table being purged — including rows of batches still to come — is never
blocked for longer than a small fraction of the run."""

from __future__ import annotations

import asyncio
import random
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import func, select, text, update

from flowledger.db.database import Database
from flowledger.db.schema import workflow_job_executions, workflow_jobs
from flowledger.ops.retention import runs as ops

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
JOBS = 100_000

_SQLITE_FILL = """
WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < :count)
INSERT INTO workflow_jobs (type, pool, status, payload, tenant_id, priority, run_at,
  attempts, max_attempts, generation, execution_timeout_ms, operation_key, trace_id,
  created_at, updated_at)
SELECT 'webhook_delivery', 'workflow-ledger-outbound', 'succeeded', '{}', 'default', 100,
  :old, 1, 5, 1, 600000, 'op-' || i, 'trace-' || i, :old, :old FROM n
"""
_PG_FILL = """
INSERT INTO workflow_jobs (type, pool, status, payload, tenant_id, priority, run_at,
  attempts, max_attempts, generation, execution_timeout_ms, operation_key, trace_id,
  created_at, updated_at)
SELECT 'webhook_delivery', 'workflow-ledger-outbound', 'succeeded', '{}'::jsonb, 'default',
  100, :old, 1, 5, 1, 600000, 'op-' || i, 'trace-' || i, :old, :old
FROM generate_series(1, :count) AS i
"""
_ATTEMPTS = """
INSERT INTO workflow_job_executions (job_id, generation, attempt, status, scheduled_at,
  started_at, finished_at, duration_ms)
SELECT id, 1, 1, 'succeeded', :old, :old, :old, 5 FROM workflow_jobs
"""


async def _fill(db: Database) -> None:
    old = NOW - timedelta(days=40)
    # on SQLite the text UTCDateTime writes (microseconds included): retention
    # pages by (updated_at, id), so the stored text must compare as written
    naive = old.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
    value: object = naive if db.is_sqlite else old
    async with db.begin() as conn:
        await conn.execute(
            text(_SQLITE_FILL if db.is_sqlite else _PG_FILL), {"count": JOBS, "old": value}
        )
        await conn.execute(text(_ATTEMPTS), {"old": value})


async def _count(db: Database) -> int:
    async with db.read() as conn:
        return int(
            (await conn.execute(select(func.count()).select_from(workflow_jobs))).scalar_one()
        )


async def test_run_over_200k_rows_holds_locks_one_batch_at_a_time_O20(db: Database) -> None:
    await _fill(db)
    async with db.read() as conn:
        attempts = (
            await conn.execute(select(func.count()).select_from(workflow_job_executions))
        ).scalar_one()
    assert (await _count(db), attempts) == (JOBS, JOBS)

    done = asyncio.Event()
    waits: list[float] = []
    seen: list[int] = []

    async def writer() -> None:
        rng = random.Random(7)
        while not done.is_set():
            target = rng.randint(1, JOBS)  # often a row of a batch still to come
            started = time.monotonic()
            async with db.begin() as conn:
                await conn.execute(
                    update(workflow_jobs).where(workflow_jobs.c.id == target).values(priority=99)
                )
            waits.append(time.monotonic() - started)
            await asyncio.sleep(0.005)

    async def observer() -> None:
        while not done.is_set():
            seen.append(await _count(db))
            await asyncio.sleep(0.02)

    tasks = [asyncio.create_task(writer()), asyncio.create_task(observer())]
    started = time.monotonic()
    try:
        run = await ops.run_retention(
            db, now=NOW, trigger="manual", actor="test", policies=["workflow_jobs"]
        )
    finally:
        done.set()
        await asyncio.gather(*tasks)
    elapsed = time.monotonic() - started

    item = run["items"][0]
    assert item["tables"] == {
        "workflow_jobs": JOBS,
        "workflow_job_executions": JOBS,
        "workflow_job_effects": 0,
    }
    assert item["batches"] == JOBS // ops.BATCH_SIZE + 1  # 100 full batches and the empty end
    assert await _count(db) == 0
    # each batch committed on its own: others saw many intermediate counts
    intermediate = {c for c in seen if 0 < c < JOBS}
    assert len(intermediate) >= 10, (len(intermediate), elapsed)
    assert all(c % ops.BATCH_SIZE == 0 for c in intermediate)
    # and the writer kept going during the run, never stuck behind the whole run
    assert len(waits) >= 20, (len(waits), elapsed)
    # (a third of the run: a checkpoint or a loaded CI core may stall one
    # write for a few batches, but never for the run)
    assert max(waits) < elapsed / 3, (max(waits), elapsed)
