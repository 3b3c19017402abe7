"""Migration 0019 (issue 34 item 1) on a populated database of each backend:
the attempts created at revision 0017 are all there after the upgrade to
head, same count, same checksum of every column of every row; on PostgreSQL
the table is now partitioned, the old rows are one attached partition
covering their days, the day partitions ahead and DEFAULT exist, ids go on
from the old sequence, and a downgrade gives the same rows back in one
plain table."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from alembic import command
from sqlalchemy import select

from flowledger.db.database import Database
from flowledger.db.history_partitions import DEFAULT_PARTITION, LEGACY_PARTITION, day_partition
from flowledger.db.migrate import alembic_config, upgrade
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.ledger.driver.history_partitions import partitions_list
from tests.ops.rows import add_execution, add_job

D = timedelta(days=1)


@pytest.fixture
async def fresh(empty_db_url: str) -> AsyncIterator[Database]:
    database = Database(empty_db_url)
    try:
        yield database
    finally:
        await database.dispose()


async def _snapshot(db: Database) -> tuple[int, str]:
    """The attempts' count and a checksum of every column of every row."""
    async with db.read() as conn:
        rows = (await conn.execute(select(executions).order_by(executions.c.id))).all()
    digest = hashlib.sha256(repr([tuple(r) for r in rows]).encode()).hexdigest()
    return len(rows), digest


def _downgrade(sync_conn: Any, revision: str) -> None:
    config = alembic_config()
    config.attributes["connection"] = sync_conn
    command.downgrade(config, revision)


async def test_a_populated_database_keeps_every_attempt(fresh: Database) -> None:
    await upgrade(fresh, "0017")
    now = datetime.now(UTC).replace(microsecond=0)
    for day in range(6, 0, -1):  # six days of history, three jobs a day
        for n in range(3):
            started = now - day * D - n * timedelta(hours=1)
            job = await add_job(fresh, started, status="succeeded", updated_at=started)
            await add_execution(
                fresh, job, scheduled_at=started, started_at=started, request={"n": n}, error="e"
            )
            await add_execution(fresh, job, scheduled_at=started, started_at=started, attempt=2)
    before = await _snapshot(fresh)
    assert before[0] == 36
    last_id = max(await _ids(fresh))
    await upgrade(fresh)
    assert await _snapshot(fresh) == before
    fresh_job = await add_job(fresh, now)
    new_id = await add_execution(fresh, fresh_job, scheduled_at=now, started_at=now)
    assert new_id > last_id
    async with fresh.read() as conn:
        parts = await partitions_list(conn)
    if fresh.is_sqlite:
        assert parts == []
        return
    by_name = {p.name: p for p in parts}
    legacy = by_name[LEGACY_PARTITION]
    assert legacy.low is not None and legacy.high is not None
    # the old rows' days, up to today's partition
    assert legacy.low <= now - 6 * D < now - D < legacy.high <= now
    for offset in range(4):
        assert day_partition((now + offset * D).date()) in by_name
    assert DEFAULT_PARTITION in by_name
    async with fresh.engine.begin() as conn:
        await conn.run_sync(_downgrade, "0017")
    count, _ = await _snapshot(fresh)
    assert count == before[0] + 1
    async with fresh.read() as conn:
        kind = await conn.exec_driver_sql(
            "SELECT relkind FROM pg_class WHERE relname = 'workflow_job_executions'"
        )
        assert kind.scalar_one() == "r"


async def _ids(db: Database) -> list[int]:
    async with db.read() as conn:
        return [int(i) for i in (await conn.execute(select(executions.c.id))).scalars()]
