"""Completing or locking a task counts its token's other open tasks (SPEC
E-3: "any" cancels the siblings, "all" waits for them) by reading only its
instance's open tasks, never every open task there is (issue 15 item 2: the
count without the instance condition read the whole open-task set of the
system per approval, 1.4 ms at 1,200 open tasks and growing with them).
Checked in each backend's own plan of the two statements, on both."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.dialects import postgresql, sqlite

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_tasks
from flowledger.engine.tasks import _LOCK_WITH_TOKEN, _OPEN_SIBLINGS_LEFT
from tests.integration.engine_helpers import END, START, approval, definition, new_engine, tasks


def _sql(statement: Any, is_sqlite: bool, params: dict[str, Any]) -> str:
    dialect = sqlite.dialect() if is_sqlite else postgresql.dialect()
    return str(
        statement.params(params).compile(dialect=dialect, compile_kwargs={"literal_binds": True})
    )


def _pg_sibling_scans(node: dict[str, Any]) -> list[dict[str, Any]]:
    found = [node] if node.get("Alias") == "sibling" else []
    for child in node.get("Plans", []):
        found += _pg_sibling_scans(child)
    return found


async def test_the_sibling_count_reads_only_the_instances_open_tasks_E3(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(
        definition(
            "p", [START, approval("mgr", "alice", "bob"), END], [("start", "mgr"), ("mgr", "end")]
        ),
        actor="admin",
    )
    for _ in range(30):  # other instances' open tasks, which the count must not read
        await engine.start("p", form={}, initiator="carol")
    iid = await engine.start("p", form={}, initiator="carol")
    task_id = (await tasks(db, iid, status="pending"))[0]["id"]
    statements = [
        _sql(_LOCK_WITH_TOKEN, db.is_sqlite, {"task_id": task_id}),
        # the count completing a task returns (finish_actionable_task's RETURNING)
        _sql(
            select(_OPEN_SIBLINGS_LEFT).where(workflow_tasks.c.id == task_id),
            db.is_sqlite,
            {},
        ),
    ]
    async with db.begin() as conn:
        for sql in statements:
            if db.is_sqlite:
                plan = [row[-1] for row in await conn.execute(text("EXPLAIN QUERY PLAN " + sql))]
                siblings = [line for line in plan if "sibling" in line]
                assert siblings and all("(instance_id=?" in line for line in siblings), plan
                continue
            # the tables are small: without statistics the planner may guess that
            # the status half of ix_workflow_tasks_instance is the selective one
            # (a CI run did), and without enable_seqscan off it may read them
            # whole either way; with both, only an index condition on
            # instance_id avoids the open-task scan the count used to make
            await conn.execute(text("ANALYZE workflow_tasks"))
            await conn.execute(text("ANALYZE workflow_tokens"))
            await conn.execute(text("SET LOCAL enable_seqscan = off"))
            document = (await conn.execute(text("EXPLAIN (FORMAT JSON) " + sql))).scalar_one()
            plan = document if isinstance(document, list) else json.loads(document)
            scans = _pg_sibling_scans(plan[0]["Plan"])
            assert scans, plan
            for scan in scans:
                condition = scan.get("Index Cond", "") + scan.get("Recheck Cond", "")
                assert "instance_id" in condition, scan
