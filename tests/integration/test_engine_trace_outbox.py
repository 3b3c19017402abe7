"""Engine trace (SPEC E-8) and the event outbox (E-10): every step is traced
with the instance's traceId, and events are written in the same transaction
as the change — a refused action leaves neither."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox
from flowledger.engine.errors import FormInvalidError
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    new_engine,
    pending_task,
    trace_events,
)


async def _events(db: Database, instance_id: int) -> list[tuple[str, str]]:
    async with db.read() as conn:
        rows = (
            await conn.execute(
                select(workflow_event_outbox.c.event_type, workflow_event_outbox.c.status)
                .where(workflow_event_outbox.c.instance_id == instance_id)
                .order_by(workflow_event_outbox.c.id)
            )
        ).all()
    return [(r.event_type, r.status) for r in rows]


async def test_trace_and_outbox_follow_the_instance_E8_E10(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    form = [{"key": "amount", "type": "number"}]
    await engine.deploy(
        definition(
            "p", [START, approval("mgr", "boss"), END], [("start", "mgr"), ("mgr", "end")], form
        ),
        actor="a",
    )
    iid = await engine.start("p", form={}, initiator="u")
    task = await pending_task(db, iid, "mgr")
    with pytest.raises(FormInvalidError):  # refused: nothing of it may remain
        await engine.approve(task, actor="boss", form={"amount": "lots"})
    assert await _events(db, iid) == [("instance.started", "pending"), ("task.created", "pending")]
    await engine.approve(task, actor="boss")
    assert [e for e, _ in await _events(db, iid)] == [
        "instance.started",
        "task.created",
        "task.completed",
        "instance.finished",
    ]
    trace = await trace_events(db, iid)
    trace_id = (await instance(db, iid))["trace_id"]
    assert {t["trace_id"] for t in trace} == {trace_id}
    assert [(t["event"], t["node_key"]) for t in trace if t["event"].startswith("node_")] == [
        ("node_entered", "start"),
        ("node_left", "start"),
        ("node_entered", "mgr"),
        ("node_left", "mgr"),
        ("node_entered", "end"),
    ]
    kinds = [t["event"] for t in trace]
    assert kinds[0] == "instance_started" and kinds[-2:] == ["instance_finished", "event_emitted"]
    assert "task_created" in kinds and "task_completed" in kinds and "token_consumed" in kinds
