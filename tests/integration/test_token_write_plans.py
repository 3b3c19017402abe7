"""The engine's token writes find their rows by index in the plans cached
on a new, never-analyzed table (issue 15 item 2; SPEC E-4): a step's token
moves, a fork's consumed token and a join's consumed arrivals. On
PostgreSQL psycopg prepares a statement on its sixth use and the server may
then keep one generic plan for it, made while the tables are small and
kept as they grow until an ANALYZE replans (never, with autovacuum off, as
on the bench host); an UPDATE joined to a JSON document (estimated at 100
rows) or filtered by a bare ``id = ANY(…)`` is planned there as a
sequential scan of every token. These tests plan the statements as such a
cached plan is made — generic, on the emptied, never-analyzed table — and
read the plan. So is an approval's task completion, whose check of the
task's token once read every token waiting at the task's node. SQLite has
no plan cache (each statement is planned as the table is): its move
statement is checked to search by key, the rest skip."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text

from flowledger.db.database import Database
from flowledger.engine import tasks
from flowledger.engine.store import tokens as engine_tokens
from flowledger.engine.store import writes as engine_writes
from tests.integration.generic_plans import generic_plan, sqlite_plan


def _driver_sql(db: Database, statement: Any) -> str:
    return str(statement.compile(dialect=db.engine.dialect))


async def test_token_moves_update_by_primary_key_in_a_generic_plan_E4(db: Database) -> None:
    moves = {11: "approve", 12: "join"}
    parks = {12}
    if db.is_sqlite:  # SQLite plans each statement afresh: the moves' own, by rowid
        plan = await sqlite_plan(db, engine_writes._MOVE_AND_PARK, token_id=11, to_node="j")
        assert "USING INTEGER PRIMARY KEY" in plan
        return
    for count in (1, 2, engine_writes.MOVES_UNROLLED):
        some = dict(list({**moves, **{100 + i: "n" for i in range(count)}}.items())[:count])
        params = engine_writes._moves_params(some, parks, prefix="step_")
        step_ctes = engine_writes._step_rows_ctes(engine_writes._moves_key(some))
        ctes = step_ctes.split(", events AS")[0]
        plan = await generic_plan(db, f"WITH {ctes} SELECT 1", params)
        assert "Seq Scan on workflow_tokens" not in plan, plan
        assert plan.count("Index Scan using pk_workflow_tokens") == count, plan


async def test_a_forks_and_a_joins_consumed_tokens_are_found_by_instance_E4(
    db: Database,
) -> None:
    if db.is_sqlite:
        pytest.skip("SQLite plans each statement afresh (no plan cache): nothing is kept")
    params = {
        "instance_id": 7,
        "consume": [11, 12],
        "at_node": "join",
        "places": '[{"node_key": "route"}]',
        "fork_stack": "[]",
        "now": "2026-12-04T00:00:00Z",
        "frame_node": "fork",
        "gateway": "parallel",
        "expected": 2,
    }
    for statement in (engine_tokens._PG_JOIN, engine_tokens._PG_FORK):
        sql = _driver_sql(db, statement)
        plan = await generic_plan(db, sql, params)
        assert "Seq Scan on workflow_tokens" not in plan, plan
        assert "ix_workflow_tokens_instance_state" in plan, plan


async def test_the_probe_sees_a_sequential_scan_where_there_is_one(db: Database) -> None:
    """The checks above can fail: an UPDATE with no index to search by is
    planned as a sequential scan. (A bare ``id = ANY(…)`` was the example
    here; on the emptied table its sequential scan and its index scan cost
    nearly the same, and the planner took either in different runs.)"""
    if db.is_sqlite:
        pytest.skip("the probe plans PostgreSQL's cached generic plan")
    sql = "UPDATE workflow_tokens SET state = 'consumed' WHERE fork_stack::text = %(stack)s"
    plan = await generic_plan(db, sql, {"stack": "[]"})
    assert "Seq Scan on workflow_tokens" in plan
    async with db.read() as conn:  # nothing was written
        assert (await conn.execute(text("SELECT count(*) FROM workflow_tokens"))).scalar() == 0


async def test_an_approvals_task_completion_reads_its_token_by_primary_key_E5(
    db: Database,
) -> None:
    """The completion checks that the task's token is active at the task's
    node. Planned as a join, the generic plan searched the token by node and
    state (every token waiting at an approval node, for each approval)."""
    if db.is_sqlite:
        pytest.skip("SQLite plans each statement afresh (no plan cache): nothing is kept")
    for by_assignee in (False, True):
        statement = tasks._FINISH_ACTIONABLE[by_assignee]
        values = {
            "b_task_id": 5,
            "b_instance_id": 7,
            "b_kinds": ["approval"],
            "b_assignee": "approver",
            "status": "completed",
            "action": "approve",
            "comment": None,
            "finished_at": "2026-12-04T00:00:00Z",
            "finished_by": "approver",
        }
        keys = [k for k in values if by_assignee or k != "b_assignee"]
        compiled: Any = statement.compile(dialect=db.engine.dialect, column_keys=keys)
        params = compiled.construct_params({k: values[k] for k in keys})
        expanded = compiled._process_parameters_for_postcompile(params)
        plan = await generic_plan(
            db, expanded.statement, params, emptied="workflow_tokens, workflow_tasks"
        )
        assert "ix_workflow_tokens_node_state" not in plan, plan
        assert "Seq Scan on workflow_tokens" not in plan, plan
        assert "Index Scan using pk_workflow_tokens on workflow_tokens held" in plan, plan
