"""Every fenced write finds its jobs by primary key (issue 32; SPEC L-9,
L-10: a settlement is the fenced write of a successful attempt; L-13, L-14:
a step's fenced job lock and its settlement with the step's receipt).

The fence used to test the job's status as ``status = 'running'``, and
PostgreSQL's planner chose an index of that column instead of the primary
key: the partial index ``ix_workflow_jobs_running_lease`` (a bitmap scan of
all of it, or an index scan filtered by id) or ``ix_workflow_jobs_status_type``.
Every claim adds an entry to both, and a settled job's entries stay until
VACUUM, so each fenced write read the entries of every job claimed since
the last vacuum (5,200 entries to settle one job at the end of a 5,000-job
drain, in the server's own plan log). It did so in the batch settlement on
an analyzed ledger (the planner counts a handful of running jobs), and in
every single-job statement on a never-analyzed one (the bench host, which
runs without autovacuum, and a new installation until autovacuum's first
ANALYZE). The status test is now
:data:`~flowledger.ledger.driver.fence.STILL_RUNNING`, ``IS NOT DISTINCT
FROM``, which no index serves.

These tests read the plans the statements run: the generic plan of each
prepared statement (the worker's hot path and the engine's step force
generic plans), and the plan of the multi-row fence
(:func:`~flowledger.ledger.driver.plans.fence_clause`, sent with its values
and planned for them), on a ledger of settled and running jobs, analyzed
(as autovacuum leaves it) and never analyzed, and on a new, emptied ledger.
The batch settlement is not held to the primary key on the new ledger:
there PostgreSQL takes the table for 10 pages and rightly prefers reading
them to looking up ~10 ids, and the plan it caches so is made again once
the table's statistics change (autovacuum's first ANALYZE; the ledger
bench starts its worker on a full table). SQLite plans each statement
afresh and has no bitmap scans; its fenced lock and its multi-row fence are
checked to search by rowid.
"""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.dialects import postgresql

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.engine.store.job_lock import _PG_LOCK, _PG_LOCK_AND_FINISH
from flowledger.ledger.driver import PostgresFastLedger, ledger_driver
from flowledger.ledger.driver.core_registry import _LOCK_FENCED_RECEIPT
from flowledger.ledger.driver.plans import fence_clause
from flowledger.ledger.driver.postgres_sql import (
    SETTLE_ONE_WITH_RECEIPT_SQL,
    SETTLE_SUCCESS_SQL,
)
from flowledger.ledger.models import JobSpec, Outcome
from tests.integration.generic_plans import generic_plan, literal_plan, sqlite_plan
from tests.integration.ledger_helpers import LEDGER, TEST_JOB_TYPES, TEST_TYPE

# the states a plan is made in: 2,005 jobs, analyzed or never analyzed
# (the bench host, without autovacuum); and a new ledger, emptied and never
# analyzed, which PostgreSQL takes for 10 pages (``emptied``)
STATES = ("analyzed", "never_analyzed", "new")
NOW = "2026-01-01T00:00:00+00:00"


async def _ledger_in(state: str, db: Database, clock: ManualClock) -> str | None:
    """The ledger in ``state``; the tables generic_plan must empty."""
    await _ledger_with_history(db, clock, analyze=state == "analyzed")
    return "workflow_jobs" if state == "new" else None


async def _ledger_with_history(db: Database, clock: ManualClock, *, analyze: bool) -> None:
    """2,000 jobs claimed and settled through the hot path, 5 left running;
    then, if ``analyze``, ANALYZE, as autovacuum would."""
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
    if analyze:
        async with db.begin() as conn:
            await conn.exec_driver_sql("ANALYZE workflow_jobs")


def assert_by_primary_key_only(plan: str) -> None:
    """The plan reads ``workflow_jobs`` through its primary key: no other
    index of it, and no sequential scan."""
    assert "pk_workflow_jobs" in plan, plan
    assert "ix_workflow_jobs_" not in plan, plan
    assert "Seq Scan on workflow_jobs" not in plan, plan


def _core_sql(db: Database, statement: Any) -> tuple[str, dict[str, Any]]:
    """A Core statement's PostgreSQL text and its bound defaults, with the
    fence's own values filled in."""
    compiled = statement.compile(dialect=db.engine.dialect)
    params = {name: 1 for name in re.findall(r"%\((\w+)\)s", str(compiled))}
    params.update({k: v for k, v in compiled.params.items() if v is not None})
    params.update(job_id=1, generation=0, lease_token="t", operation_key="o", step_key="s")
    return str(compiled), {k: NOW if "now" in k else v for k, v in params.items()}


@pytest.mark.parametrize("state", ["analyzed", "never_analyzed"])
async def test_a_batch_settlement_finds_its_jobs_by_primary_key_L9(
    db: Database, clock: ManualClock, state: str
) -> None:
    if db.is_sqlite:
        pytest.skip("PostgreSQL's cached generic plan: SQLite plans each statement afresh")
    emptied = await _ledger_in(state, db, clock)
    row = {"id": 1, "gen": 0, "token": "t", "exec_id": 1, "duration": 1, "skipped": False,
           "result": None, "exec_start": NOW}  # fmt: skip
    params = {"rows": json.dumps([row]), "now": NOW, "first_start": NOW, "last_start": NOW}
    plan = await generic_plan(db, SETTLE_SUCCESS_SQL, params, emptied=emptied)
    # the lock and the update each search the primary key
    assert plan.count("pk_workflow_jobs") >= 2, plan
    assert_by_primary_key_only(plan)


@pytest.mark.parametrize("state", STATES)
async def test_a_steps_fenced_statements_find_its_job_by_primary_key_L13_L14(
    db: Database, clock: ManualClock, state: str
) -> None:
    if db.is_sqlite:
        pytest.skip("PostgreSQL's cached generic plan: SQLite plans each statement afresh")
    emptied = await _ledger_in(state, db, clock)
    settle_one = {"id": 1, "gen": 0, "token": "t", "exec_id": 1, "exec_start": NOW,
                  "duration": 1, "skipped": False, "result": None, "operation_key": "o",
                  "step_key": "s", "receipt": "{}", "now": NOW}  # fmt: skip
    assert_by_primary_key_only(
        await generic_plan(db, SETTLE_ONE_WITH_RECEIPT_SQL, settle_one, emptied)
    )
    # the ledger's fenced lock with the receipt, and the engine's step lock
    # (instance row first, L-13) without and with an approval's task finish
    for statement in (_LOCK_FENCED_RECEIPT, _PG_LOCK, _PG_LOCK_AND_FINISH):
        sql, params = _core_sql(db, statement)
        assert_by_primary_key_only(await generic_plan(db, sql, params, emptied))


@pytest.mark.parametrize("state", STATES)
async def test_the_multi_row_fence_finds_its_jobs_by_primary_key_L9(
    db: Database, clock: ManualClock, state: str
) -> None:
    """The fence of the failure settlement, the lease renewal and the
    Core success settlement, planned for its values."""
    fenced = select(jobs.c.id).where(fence_clause([(1, 0, "t"), (2, 0, "t")])).with_for_update()
    if db.is_sqlite:
        if state != "new":
            pytest.skip("SQLite keeps no plan: one state is enough")
        plan = await sqlite_plan(db, fenced)
        assert "USING INTEGER PRIMARY KEY" in plan, plan
        return
    emptied = await _ledger_in(state, db, clock)
    sql = str(fenced.compile(dialect=postgresql.dialect(), compile_kwargs={"literal_binds": True}))
    assert_by_primary_key_only(await literal_plan(db, sql, emptied))


async def test_sqlites_fenced_lock_searches_by_rowid_L13(db: Database) -> None:
    if not db.is_sqlite:
        pytest.skip("SQLite's plan of the fenced lock (PostgreSQL's: the tests above)")
    plan = await sqlite_plan(
        db, _LOCK_FENCED_RECEIPT, job_id=1, generation=0, lease_token="t", operation_key="o",
        step_key="s", now=NOW,
    )  # fmt: skip
    assert "USING INTEGER PRIMARY KEY" in plan, plan
