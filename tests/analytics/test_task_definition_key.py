"""The task's copy of its instance's definition key (SPEC O-14, migration
0013): the engine sets it when it creates a task, the migration backfills it
on existing rows, and the node-bottleneck panel groups by it without joining
``workflow_instances`` — on both backends."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import insert, select

from flowledger.clock import ManualClock
from flowledger.db.analytics_schema import ix_tasks_node_finished, ix_tasks_pending
from flowledger.db.database import Database
from flowledger.db.engine_schema import (
    workflow_definitions,
    workflow_instances,
    workflow_tasks,
)
from flowledger.db.migrate import upgrade
from flowledger.ops.analytics import tasks as analytics_tasks
from flowledger.ops.analytics.instances import HUMAN_TASK_KINDS
from flowledger.ops.analytics.sql import AnalyticsScope
from tests.analytics import rows
from tests.integration.engine_helpers import END, START, approval, definition, new_engine
from tests.statement_watch import watched

NOW = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)


@contextmanager
def statements(db: Database) -> Iterator[list[str]]:
    """The SQL text of every statement ``db`` executes inside the block."""
    with watched(db) as seen:
        yield seen


async def test_engine_copies_the_definition_key_to_every_task_O14(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    for key in ("expense", "travel"):
        await engine.deploy(
            definition(
                key,
                [START, approval("mgr", "alice", "bob"), END],
                [("start", "mgr"), ("mgr", "end")],
            ),
            actor="admin",
        )
    expense = await engine.start("expense", form={}, initiator="carol")
    travel = await engine.start("travel", form={}, initiator="carol")
    async with db.read() as conn:
        found = (
            await conn.execute(
                select(workflow_tasks.c.instance_id, workflow_tasks.c.definition_key).order_by(
                    workflow_tasks.c.id
                )
            )
        ).all()
    assert [tuple(r) for r in found] == [
        (expense, "expense"),
        (expense, "expense"),
        (travel, "travel"),
        (travel, "travel"),
    ]


async def test_node_bottlenecks_never_join_the_instances_O14(db: Database) -> None:
    a = await rows.add_instance(db, "expense", created_at=NOW - timedelta(days=2))
    b = await rows.add_instance(db, "travel", created_at=NOW - timedelta(days=2))
    for iid in (a, b):
        await rows.add_task(
            db,
            iid,
            "mgr",
            "alice",
            created_at=NOW - timedelta(hours=5),
            status="completed",
            finished_at=NOW - timedelta(hours=4),
        )
        await rows.add_task(db, iid, "mgr", "bob", created_at=NOW - timedelta(hours=1))
    with statements(db) as seen:
        body = await analytics_tasks.node_bottlenecks(db, AnalyticsScope(), now=NOW)
        scoped = await analytics_tasks.node_bottlenecks(
            db, AnalyticsScope(definition_key="travel"), now=NOW
        )
    assert seen and not [s for s in seen if "workflow_instances" in s]
    assert [(i["definitionKey"], i["handled"], i["backlog"]) for i in body["items"]] == [
        ("expense", 1, 1),
        ("travel", 1, 1),
    ]
    assert body["items"][0]["avgHandlingMs"] == 3_600_000
    assert [(i["definitionKey"], i["nodeKey"]) for i in scoped["items"]] == [("travel", "mgr")]


def test_pending_index_predicate_names_the_human_task_kinds_O14() -> None:
    where = str(ix_tasks_pending.dialect_options["postgresql"]["where"])
    listed = re.search(r"kind IN \(([^)]*)\)", where)
    assert listed is not None
    assert tuple(k.strip(" '") for k in listed.group(1).split(",")) == HUMAN_TASK_KINDS


def test_node_finished_index_predicate_names_the_human_task_kinds_O14() -> None:
    where = str(ix_tasks_node_finished.dialect_options["postgresql"]["where"])
    assert "status = 'completed'" in where
    listed = re.search(r"kind IN \(([^)]*)\)", where)
    assert listed is not None
    assert tuple(k.strip(" '") for k in listed.group(1).split(",")) == HUMAN_TASK_KINDS


@pytest.fixture
async def fresh(empty_db_url: str) -> AsyncIterator[Database]:
    database = Database(empty_db_url)
    try:
        yield database
    finally:
        await database.dispose()


async def test_migration_0013_backfills_the_key_of_existing_tasks_O14(fresh: Database) -> None:
    await upgrade(fresh, "0012")
    async with fresh.begin() as conn:
        for did, iid, key in ((1, 10, "expense"), (2, 11, "travel")):
            await conn.execute(
                insert(workflow_definitions).values(
                    id=did,
                    tenant_id="default",
                    key=key,
                    version=1,
                    name=key,
                    source={},
                    deployed_by="dev",
                    deployed_at=NOW,
                )
            )
            await conn.execute(
                insert(workflow_instances).values(
                    id=iid,
                    tenant_id="default",
                    definition_id=did,
                    definition_key=key,
                    definition_version=1,
                    snapshot={},
                    status="running",
                    form_data={},
                    initiator="carol",
                    trace_id=f"tr{iid}",
                    created_at=NOW,
                    updated_at=NOW,
                )
            )
            for status in ("pending", "completed"):
                # the columns revision 0010 has: no definition_key yet
                await conn.execute(
                    insert(workflow_tasks).values(
                        instance_id=iid,
                        tenant_id="default",
                        node_key="mgr",
                        kind="approval",
                        status=status,
                        assignee="alice",
                        created_at=NOW,
                    )
                )
    await upgrade(fresh)
    async with fresh.read() as conn:
        found = (
            await conn.execute(
                select(workflow_tasks.c.instance_id, workflow_tasks.c.definition_key).order_by(
                    workflow_tasks.c.instance_id, workflow_tasks.c.id
                )
            )
        ).all()
    assert [tuple(r) for r in found] == [
        (10, "expense"),
        (10, "expense"),
        (11, "travel"),
        (11, "travel"),
    ]
