"""Zero false positives (SPEC O-16, O-12): a few hundred healthy instances
driven by the engine through every node type — human waits below the
threshold, parked joins, subprocess children running within the threshold,
delays not yet due and delays woken, triggers and external dispatches that
succeeded against a real 127.0.0.1 receiver, cc, catch, resubmission, a
suspended and ended instances — give no inspection problem and no
consistency conclusion at all."""

from __future__ import annotations

from typing import Any

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.settings import Settings
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    new_engine,
    pending_task,
    tasks,
)
from tests.ops.health_support import (
    external_flow,
    findings,
    inspection,
    run_and_flush,
    subprocess_flow,
    trigger_flow,
)
from tests.outbound import conftest as outbound_fixtures
from tests.outbound.receivers import Receiver

receiver = outbound_fixtures.receiver
other_receiver = outbound_fixtures.other_receiver
outbound_env = outbound_fixtures.outbound_env

PER_FLOW = 16
MIN = 60


def flows(url: str) -> list[dict[str, Any]]:
    parent, kid = subprocess_flow()
    gate_form = [{"key": "amount", "type": "number"}]
    return [
        definition(
            "plain",
            [
                START,
                approval("manager", "alice", timeout={"after": "PT2H", "action": "notify"}),
                END,
            ],
            [("start", "manager"), ("manager", "end")],
        ),
        definition(
            "errand",
            [START, {"key": "desk", "type": "handle", "assignees": {"users": ["hal"]}}, END],
            [("start", "desk"), ("desk", "end")],
        ),
        definition(
            "copy",
            [
                START,
                {"key": "cc", "type": "cc", "assignees": {"users": ["bob"]}},
                approval("boss", "carol"),
                END,
            ],
            [("start", "cc"), ("cc", "boss"), ("boss", "end")],
        ),
        definition(
            "longwait",
            [START, {"key": "pause", "type": "delay", "duration": "PT3H"}, END],
            [("start", "pause"), ("pause", "end")],
        ),
        definition(
            "shortwait",
            [
                START,
                {"key": "pause", "type": "delay", "duration": "PT1M"},
                approval("ok", "dan"),
                END,
            ],
            [("start", "pause"), ("pause", "ok"), ("ok", "end")],
        ),
        definition(
            "forks",
            [
                START,
                {"key": "fork", "type": "parallel"},
                approval("a", "alice"),
                {"key": "note", "type": "cc", "assignees": {"users": ["bob"]}},
                {"key": "join", "type": "parallel"},
                END,
            ],
            [
                ("start", "fork"),
                ("fork", "a"),
                ("fork", "note"),
                ("a", "join"),
                ("note", "join"),
                ("join", "end"),
            ],
        ),
        definition(
            "mixed",
            [
                START,
                {"key": "split", "type": "inclusive"},
                approval("big", "erin"),
                {"key": "later", "type": "delay", "duration": "PT2H"},
                {"key": "merge", "type": "inclusive"},
                END,
            ],
            [
                ("start", "split"),
                {"from": "split", "to": "big", "condition": "form.amount > 10"},
                {"from": "split", "to": "later", "condition": "form.amount > 1"},
                ("big", "merge"),
                ("later", "merge"),
                ("merge", "end"),
            ],
            gate_form,
        ),
        definition(
            "route",
            [
                START,
                {"key": "gate", "type": "exclusive"},
                approval("x", "fay"),
                approval("y", "gus"),
                END,
            ],
            [
                ("start", "gate"),
                {"from": "gate", "to": "x", "condition": "form.amount > 10"},
                {"from": "gate", "to": "y", "default": True},
                ("x", "end"),
                ("y", "end"),
            ],
            gate_form,
        ),
        definition(
            "both",
            [START, approval("pair", "alice", "bob", mode="all"), END],
            [("start", "pair"), ("pair", "end")],
        ),
        kid,
        parent,
        trigger_flow(url),
        external_flow(url),
    ]


STARTS: list[tuple[str, dict[str, Any]]] = [
    ("plain", {}),
    ("errand", {}),
    ("copy", {}),
    ("longwait", {}),
    ("shortwait", {}),
    ("forks", {}),
    ("mixed", {"amount": 50}),
    ("mixed", {"amount": 5}),
    ("route", {"amount": 50}),
    ("route", {"amount": 1}),
    ("both", {}),
    ("parent", {}),
    ("erp", {}),
    ("ext", {}),
]


async def _ended_and_suspended(engine: Engine, db: Database) -> None:
    """Instances in every other state: approved, rejected, withdrawn,
    canceled, suspended, returned to the initiator, a subprocess joined."""
    ids = [await engine.start("plain", form={}, initiator="u") for _ in range(6)]
    await engine.approve(await pending_task(db, ids[0], "manager"), actor="alice")
    await engine.reject(await pending_task(db, ids[1], "manager"), actor="alice")
    await engine.withdraw(ids[2], actor="u")
    await engine.cancel(ids[3], actor="admin", reason="dup")
    await engine.suspend(ids[4], actor="admin", reason="audit")
    await engine.return_to_initiator(ids[5], actor="admin", reason="fix it")


async def test_healthy_instances_give_nothing_O16_O12(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    engine = new_engine(db, clock)
    for flow in flows(receiver.url):
        await engine.deploy(flow, actor="a")
    started = [
        await engine.start(key, form=form, initiator="u")
        for _ in range(PER_FLOW)
        for key, form in STARTS
    ]
    await _ended_and_suspended(engine, db)
    await run_and_flush(db, clock)  # triggers and dispatches succeed, children spawn
    # half of the `both` approvals are half done (one of two approved)
    for iid in started[10 :: len(STARTS)][: PER_FLOW // 2]:
        await engine.approve(await pending_task(db, iid, "pair", "alice"), actor="alice")
    # one child of each two approves: its parent joins and moves on
    parents = started[11 :: len(STARTS)]
    for parent in parents[: PER_FLOW // 2]:
        (_sub,) = await tasks(db, parent, node_key="sub")
        child = await _child_of(db, parent)
        await engine.approve(await pending_task(db, child, "check"), actor="auditor")
    clock.advance(seconds=5 * MIN)
    await run_and_flush(db, clock)  # the short delays wake, the joins run
    clock.advance(seconds=20 * MIN)  # every wait is younger than the threshold
    await run_and_flush(db, clock)

    assert len(started) >= 200
    assert await inspection(db, clock) == []
    # not vacuous: the same waits, measured against a 10-minute threshold,
    # are the human and subprocess waits (warnings), and nothing else
    seen = await inspection(db, clock, threshold_min=10)
    assert {p.rule for p in seen} == {"waiting_task_stuck", "subprocess_waiting"}
    assert {p.level for p in seen} == {"warning"}
    async with db.read() as conn:
        from sqlalchemy import func, select

        from flowledger.db.engine_schema import workflow_tokens as wt

        parked = (
            await conn.execute(select(func.count()).where(wt.c.state == "parked"))
        ).scalar_one()
    assert parked >= PER_FLOW  # the fork's cc branch waits at the join
    async with db.read() as conn:
        from sqlalchemy import select

        from flowledger.db.engine_schema import workflow_instances as wi

        every = [r.id for r in await conn.execute(select(wi.c.id))]
    for iid in every:
        found = await findings(db, clock, iid, threshold_min=30)
        assert found.conclusions == [], (iid, found.to_public())
        assert found.verdict.action is None
        assert found.verdict.message.startswith("nothing is wrong"), found.verdict


async def _child_of(db: Database, parent: int) -> int:
    from sqlalchemy import select

    from flowledger.db.engine_schema import workflow_instances as wi

    async with db.read() as conn:
        return int(
            (
                await conn.execute(select(wi.c.id).where(wi.c.parent_instance_id == parent))
            ).scalar_one()
        )
