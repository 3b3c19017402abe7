"""Retention and every other job delete leave no attempt or receipt behind
(issue 34; SPEC O-20), on both backends. On PostgreSQL the history tables
have no foreign key to ``workflow_jobs`` (migration 0021,
:mod:`flowledger.db.job_history_keys`): nothing cascades, so retention must
remove a job's attempts — spread over several day partitions, a retry a day
after the first, one a little after the job's own ``updated_at`` as a
skewed clock leaves it — and its receipts itself, over several batches; a
job it keeps keeps its rows."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import func, insert, select

from flowledger.db.database import Database
from flowledger.db.schema import workflow_job_effects as effects
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.driver.forge import job_forget
from flowledger.ledger.driver.history_partitions import partitions_ensure
from flowledger.ops.retention import runs as ops
from tests.ops.rows import add_execution, add_job

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
D = timedelta(days=1)


async def _add_receipt(db: Database, job_id: int, at: datetime) -> None:
    async with db.begin() as conn:
        await conn.execute(
            insert(effects).values(
                operation_key=f"op-{job_id}",
                step_key="s",
                job_id=job_id,
                generation=1,
                result={},
                created_at=at,
            )
        )


async def _orphans(db: Database) -> tuple[int, int]:
    """Attempts and receipts whose job no longer exists."""
    async with db.read() as conn:
        counts = []
        for table in (executions, effects):
            gone = ~select(jobs.c.id).where(jobs.c.id == table.c.job_id).exists()
            stmt = select(func.count()).select_from(table).where(gone)
            counts.append(int((await conn.execute(stmt)).scalar_one()))
    return counts[0], counts[1]


async def _history_keys_to_jobs(db: Database) -> list[str]:
    async with db.read() as conn:
        if db.is_sqlite:
            rows = await conn.exec_driver_sql(
                "SELECT m.name FROM sqlite_master m, pragma_foreign_key_list(m.name) f "
                "WHERE f.\"table\" = 'workflow_jobs'"
            )
        else:
            rows = await conn.exec_driver_sql(
                "SELECT DISTINCT conrelid::regclass::text FROM pg_constraint "
                "WHERE contype = 'f' AND confrelid = 'workflow_jobs'::regclass"
            )
        return sorted(str(name) for name in rows.scalars())


async def test_retention_leaves_no_attempt_or_receipt_of_a_removed_job_O20(
    db: Database,
) -> None:
    created, settled = NOW - 45 * D, NOW - 44 * D
    async with db.begin() as conn:
        await partitions_ensure(conn, now=created, ahead_days=50)
    removed = []
    for _ in range(7):  # batches of 2: four batches, the last one short
        job = await add_job(db, created, status="succeeded", updated_at=settled)
        await add_execution(db, job, scheduled_at=created, started_at=created, status="failed")
        await add_execution(db, job, scheduled_at=settled, started_at=settled, attempt=2)
        await _add_receipt(db, job, settled)
        removed.append(job)
    # an attempt stamped a little after its job's update (another node's clock)
    await add_execution(
        db, removed[0], scheduled_at=settled, started_at=settled + timedelta(hours=3), attempt=3
    )
    kept = await add_job(db, NOW - 2 * D, status="succeeded", updated_at=NOW - D)
    await add_execution(db, kept, scheduled_at=NOW - 2 * D, started_at=NOW - D)
    await _add_receipt(db, kept, NOW - D)

    preview = await ops.preview(db, now=NOW, policies=["workflow_jobs"])
    run = await ops.run_retention(
        db, now=NOW, trigger="manual", actor="test", policies=["workflow_jobs"], batch_size=2
    )
    [item] = run["items"]
    assert item["tables"] == preview["items"][0]["tables"]
    assert item["tables"] == {
        "workflow_jobs": 7,
        "workflow_job_executions": 15,
        "workflow_job_effects": 7,
    }
    assert await _orphans(db) == (0, 0)
    async with db.read() as conn:
        left = {
            table.name: sorted((await conn.execute(select(table.c.job_id))).scalars())
            for table in (executions, effects)
        }
    assert left == {"workflow_job_executions": [kept], "workflow_job_effects": [kept]}
    # nothing cascaded on PostgreSQL: retention removed them itself
    expected = [] if not db.is_sqlite else ["workflow_job_effects", "workflow_job_executions"]
    assert await _history_keys_to_jobs(db) == expected


async def test_a_forgotten_job_takes_its_attempts_and_receipts(db: Database) -> None:
    job = await add_job(db, NOW, status="pending")
    await add_execution(db, job, scheduled_at=NOW, started_at=NOW)
    await _add_receipt(db, job, NOW)
    async with db.begin() as conn:
        await job_forget(conn, job)
    assert await _orphans(db) == (0, 0)
    async with db.read() as conn:
        assert (await conn.execute(select(func.count()).select_from(executions))).scalar() == 0
