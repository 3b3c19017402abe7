"""The demo data set (issue 3: `flowledger demo`): every node type of SPEC E-3
is deployed, and the instances cover the states the console shows."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.compensation_schema import workflow_compensations
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances, workflow_tasks
from flowledger.demo import load_demo
from flowledger.demo.definitions import ALL
from tests.integration.engine_helpers import run_due_jobs
from tests.runtime_support import default_engine

NODE_TYPES = {
    "start",
    "end",
    "approval",
    "handle",
    "cc",
    "exclusive",
    "parallel",
    "inclusive",
    "delay",
    "trigger",
    "external_approval",
    "subprocess",
    "catch",
}


def test_demo_definitions_use_every_node_type() -> None:
    assert {node["type"] for d in ALL for node in d["nodes"]} == NODE_TYPES


async def test_demo_builds_a_realistic_mix(db: Database, clock: ManualClock) -> None:
    report = await load_demo(default_engine(db, clock))
    assert report.definitions == len(ALL)
    # the three subprocess spawns, the two refused erp_sync trigger calls, the
    # refused invoice_push call, and two health cases' due work (the overdue
    # delay's wake job and the overdue task's timeout job)
    assert await run_due_jobs(db, clock) == 8
    async with db.read() as conn:
        statuses = Counter((await conn.execute(select(workflow_instances.c.status))).scalars())
        waiting = Counter(
            (
                await conn.execute(
                    select(workflow_tasks.c.kind).where(workflow_tasks.c.status == "waiting")
                )
            ).scalars()
        )
    assert statuses["approved"] >= 2 and statuses["rejected"] >= 2
    assert statuses["withdrawn"] == 1 and statuses["suspended"] == 1
    assert statuses["running"] >= 10
    assert waiting["delay"] >= 3 and waiting["subprocess"] == 3
    async with db.read() as conn:
        repairs = (
            await conn.execute(
                select(workflow_tasks.c.node_key, workflow_tasks.c.assignee).where(
                    workflow_tasks.c.kind == "catch", workflow_tasks.c.status == "pending"
                )
            )
        ).all()
        tickets = (
            await conn.execute(
                select(workflow_compensations.c.status, workflow_compensations.c.kind)
            )
        ).all()
    # the erp_sync triggers failed into their catch node; invoice_push's notify
    # policy gave its failed node a repair task for the ops administrator
    assert sorted((r.node_key, r.assignee) for r in repairs) == [
        ("post", "olivia"),
        ("repair", "admin"),
        ("repair", "admin"),
    ]
    assert [(t.status, t.kind) for t in tickets] == [("pending", "notify")]
