"""A worker's success settlement finds its jobs by primary key (issue 32;
SPEC L-9, L-10: the settlement is the fenced write of every successful
attempt).

The settlement used to find its jobs by ``status = 'running'`` as well, and
PostgreSQL's planner, counting a handful of running jobs, read them through
the partial index ``ix_workflow_jobs_running_lease`` (all of it: a bitmap
scan, or an index scan filtered by id). Every claim adds an entry there and
a settled job's entry stays until VACUUM, so each settlement read the
entries of every job claimed since the last vacuum (5,200 entries to settle
one job at the end of a 5,000-job drain, in the server's own plan log). Now
its fence compares the status through the input document, which no index
serves, and both the lock and the update search ``pk_workflow_jobs``.

This test reads the plan the worker's prepared statement runs: the generic
plan (the hot path sets ``plan_cache_mode = force_generic_plan``) on a
ledger that holds settled and running jobs and has been analyzed, as
autovacuum leaves it. SQLite skips: it plans each statement afresh, has no
partial-index bitmap scans, and its settlement is by primary key already.
"""

from __future__ import annotations

import json

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ledger.driver import PostgresFastLedger, ledger_driver
from flowledger.ledger.driver.postgres_sql import SETTLE_SUCCESS_SQL
from flowledger.ledger.models import JobSpec, Outcome
from tests.integration.generic_plans import generic_plan
from tests.integration.ledger_helpers import LEDGER, TEST_JOB_TYPES, TEST_TYPE


async def _ledger_with_history(db: Database, clock: ManualClock) -> None:
    """2,000 jobs claimed and settled through the hot path, 5 left running;
    then ANALYZE, as autovacuum would."""
    async with db.begin() as conn:
        await ledger_driver(db).jobs_insert(
            conn,
            [JobSpec(type=TEST_TYPE) for _ in range(2_005)],
            now=clock.now(),
            job_types=TEST_JOB_TYPES,
        )
    fast = ledger_driver(db, fast=True)
    assert isinstance(fast, PostgresFastLedger)
    try:
        for _ in range(40):
            clock.advance(ms=1)
            claimed = await fast.jobs_claim(
                db, pool=LEDGER, limit=50, node_id="node-a", now=clock.now()
            )
            settled = await fast.jobs_settle(
                db, [(job, Outcome.success()) for job in claimed], now=clock.now()
            )
            assert settled == {job.id for job in claimed}
        running = await fast.jobs_claim(db, pool=LEDGER, limit=5, node_id="node-a", now=clock.now())
        assert len(running) == 5
    finally:
        await fast.close()
    async with db.begin() as conn:
        await conn.exec_driver_sql("ANALYZE workflow_jobs")


async def test_a_settlement_finds_its_jobs_by_primary_key_L9(
    db: Database, clock: ManualClock
) -> None:
    if db.is_sqlite:
        pytest.skip("PostgreSQL's cached generic plan: SQLite plans each statement afresh")
    await _ledger_with_history(db, clock)
    now = clock.now().isoformat()
    row = {"id": 1, "gen": 0, "token": "t", "exec_id": 1, "duration": 1, "skipped": False,
           "result": None, "exec_start": now}  # fmt: skip
    params = {"rows": json.dumps([row]), "now": now, "first_start": now, "last_start": now}
    plan = await generic_plan(db, SETTLE_SUCCESS_SQL, params, emptied=None)
    # the lock and the update each search the primary key; no other index
    # of workflow_jobs, and no sequential scan of it
    assert plan.count("pk_workflow_jobs") >= 2, plan
    assert "ix_workflow_jobs_" not in plan, plan
    assert "Seq Scan on workflow_jobs" not in plan, plan
