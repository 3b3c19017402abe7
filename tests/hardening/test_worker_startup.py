"""Issue 17 item 12 (SPEC L-6, L-21): a worker started while PostgreSQL is
down waits and retries with backoff — one log line per attempt, no
traceback, no exit — and starts once the database is up; a restart of the
database under the running worker logs no ``MissingGreenlet`` and fails no
attempt with it, and the jobs enqueued around it all succeed. Runs on a
throwaway cluster (``pgcluster``), never the shared server."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import text

from flowledger.db.database import Database
from flowledger.db.migrate import upgrade
from flowledger.ledger.models import JobSpec
from tests.e2e import e2e_handlers
from tests.e2e.test_worker_processes import Workers, process_env, wait_for
from tests.hardening.pgcluster import Cluster, throwaway_cluster
from tests.ledger_access import enqueue_many

pytestmark = pytest.mark.slow


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with throwaway_cluster() as c:
        yield c


async def _prepare(cluster: Cluster) -> None:
    db = Database(cluster.url)
    try:
        await upgrade(db)
        async with db.begin() as conn:
            await conn.execute(
                text(
                    "CREATE TABLE e2e_rows (id serial PRIMARY KEY, job_id bigint NOT NULL, "
                    "created_at timestamptz NOT NULL)"
                )
            )
    finally:
        await db.dispose()


async def _enqueue(db: Database, n: int) -> None:
    async with db.begin() as conn:
        specs = [JobSpec(type=e2e_handlers.WRITE_ROW, payload={"n": i}) for i in range(n)]
        await enqueue_many(conn, specs, now=await db.now())


async def test_worker_waits_for_the_database_and_rides_out_a_restart_item12(
    cluster: Cluster, tmp_path: Path
) -> None:
    await asyncio.to_thread(cluster.start)
    await _prepare(cluster)
    await asyncio.to_thread(cluster.stop)
    workers = Workers(process_env(cluster.url), tmp_path)
    worker = workers.start()
    try:
        log, waits = "", 0
        for _ in range(150):  # attempts at 0, 0.5, 1.5, 3.5 s … after the import
            await asyncio.sleep(0.2)
            log = worker.log_path.read_text()
            waits = log.count("worker_waiting_for_database")
            if waits >= 3:
                break
        assert worker.proc.poll() is None, worker.tail(40)
        assert waits >= 3, log
        assert "Traceback" not in log, log
        assert len(log.splitlines()) <= waits + 2, log  # one line per attempt
        await asyncio.to_thread(cluster.start)
        db = Database(cluster.url)
        try:
            started = "SELECT count(*) FROM system_scheduler_nodes"
            await wait_for(db, workers, started, 1, within=30)
            await _enqueue(db, 200)
            done = "SELECT count(*) FROM workflow_jobs WHERE status = 'succeeded'"
            await wait_for(db, workers, done, 50, within=60)
            await db.dispose()
            await asyncio.to_thread(cluster.restart)  # under the running worker
            await _enqueue(db, 100)
            await wait_for(db, workers, done, 300, within=90)
            async with db.read() as conn:
                failed = (
                    await conn.execute(
                        text(
                            "SELECT error_code, left(error, 400) FROM workflow_job_executions "
                            "WHERE error_code = 'MissingGreenlet'"
                        )
                    )
                ).all()
            assert failed == []
            rows = await _scalar(db, "SELECT count(DISTINCT job_id) FROM e2e_rows")
            assert rows == await _scalar(db, "SELECT count(*) FROM e2e_rows") == 300
        finally:
            await db.dispose()
        workers.check_alive()
    finally:
        workers.terminate_all()
    log = worker.log_path.read_text()
    assert "MissingGreenlet" not in log, log[-4000:]
    assert "Traceback" not in log, log[-4000:]
    assert worker.proc.returncode == 0, log[-2000:]


async def _scalar(db: Database, sql: str) -> int:
    async with db.read() as conn:
        return int((await conn.execute(text(sql))).scalar_one())
