"""Ending an instance (SPEC E-6, L-22; issue 15 item 2), on both backends:
the instance row gets its terminal status and finish time, and its open
tasks are closed with it — on PostgreSQL the tasks to close and the live
advancement jobs to cancel (L-22) come back from the instance's own UPDATE,
so the ending reads them in no statement of its own, and locks jobs only
when there are some to cancel; the compensation hook runs only when the
instance has a pending repair ticket, which the same UPDATE reads. A token
reaching an end is consumed in the same UPDATE that approves the instance
when it was the last live one."""

from __future__ import annotations

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from tests import statement_watch
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    forked_approvals,
    instance,
    new_engine,
    pending_task,
    tasks,
    tokens,
    trace_events,
)

TWO_OPEN = forked_approvals("instance_end")


async def test_a_canceled_instance_closes_its_open_tasks_with_its_own_update_E6(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(TWO_OPEN, actor="a")
    iid = await engine.start("instance_end", form={}, initiator="u")
    clock.advance(seconds=5)
    with statement_watch.watched(db) as seen:
        await engine.cancel(iid, actor="admin", reason="stop")
    ended = await instance(db, iid)
    assert (ended["status"], ended["finished_at"], ended["updated_at"]) == (
        "canceled",
        clock.now(),
        clock.now(),
    )
    closed = await tasks(db, iid)
    assert [(t["node_key"], t["status"], t["comment"]) for t in closed] == [
        ("a", "canceled", "stop"),
        ("b", "canceled", "stop"),
    ]
    events = [(r["event"], r["task_id"]) for r in await trace_events(db, iid)]
    finished = events.index(("instance_finished", None))
    closing = [task_id for event, task_id in events[:finished] if event == "task_completed"]
    assert closing == [t["id"] for t in closed]
    updates = [s for s in seen if s.lstrip().startswith("UPDATE workflow_instances")]
    assert len(updates) == 1
    reads = [s for s in seen if s.lstrip().startswith("SELECT") and "workflow_instances" not in s]
    task_reads = [s for s in reads if "FROM workflow_tasks" in s]
    job_locks = [s for s in reads if "FROM workflow_jobs" in s and "FOR UPDATE" in s]
    assert job_locks == []  # no live advancement job: the cleanup has nothing to lock
    # no pending repair ticket: the compensation hook (on: SPEC C-3) does not run
    assert [s for s in reads if "FROM workflow_compensations" in s] == []
    if db.is_sqlite:  # the reads, then the update
        assert len(task_reads) == 1
    else:  # the open tasks, live jobs and the hook's condition come back from the update
        assert task_reads == []
        for read in ("workflow_tasks AS o", "workflow_jobs AS j", "workflow_compensations"):
            assert f"FROM {read}" in updates[0], read


EARLY_END = definition(
    "early_end",
    [
        START,
        {"key": "fork", "type": "parallel"},
        approval("a", "ann"),
        approval("b", "bob"),
        {"key": "route", "type": "exclusive"},
        {"key": "join", "type": "parallel"},
        {"key": "endA", "type": "end"},
        END,
    ],
    [
        ("start", "fork"),
        ("fork", "a"),
        ("fork", "b"),
        ("a", "route"),
        {"from": "route", "to": "endA", "condition": "form.amount > 1000"},
        {"from": "route", "to": "join", "default": True},
        ("b", "join"),
        ("join", "end"),
    ],
    form=[{"key": "amount", "type": "number", "required": True}],
)


async def test_a_token_reaching_an_end_ends_the_instance_only_when_it_was_the_last_E4_E6(
    db: Database, clock: ManualClock
) -> None:
    """The token is consumed at its end node (its move written with it) and
    the instance is approved only when no other token is live — on
    PostgreSQL both in the instance's own UPDATE (the token's a CTE of it)."""
    engine = new_engine(db, clock)
    await engine.deploy(EARLY_END, actor="a")
    early = await engine.start("early_end", form={"amount": 5000}, initiator="u")
    late = await engine.start("early_end", form={"amount": 10}, initiator="u")
    clock.advance(seconds=5)
    ends: list[list[str]] = []
    for iid, node_key in ((early, "a"), (late, "a"), (late, "b")):
        with statement_watch.watched(db) as seen:
            task_id = await pending_task(db, iid, node_key)
            await engine.approve(task_id, actor="ann" if node_key == "a" else "bob")
        ends.append([s for s in seen if "state = 'consumed'" in s or "consumed AS" in s])
    # early: a's token ended at endA while b's is live: the instance goes on
    assert (await instance(db, early))["status"] == "running"
    assert [t["node_key"] for t in await tokens(db, early, state="active")] == ["b"]
    [at_end] = [t for t in await tokens(db, early) if t["node_key"] == "endA"]
    assert (at_end["state"], at_end["consumed_at"]) == ("consumed", clock.now())
    # late: both branches joined, and the merged token's end approved it
    ended = await instance(db, late)
    assert (ended["status"], ended["finished_at"]) == ("approved", clock.now())
    [merged] = [t for t in await tokens(db, late) if t["node_key"] == "end"]
    assert (merged["state"], merged["consumed_at"]) == ("consumed", clock.now())
    events = [(r["event"], r["node_key"]) for r in await trace_events(db, late)]
    assert events.index(("token_consumed", "end")) < events.index(("instance_finished", None))
    assert ("instance_finished", None) not in [
        (r["event"], r["node_key"]) for r in await trace_events(db, early)
    ]
    endings = [ends[0], ends[2]]  # the steps whose token reached an end
    if not db.is_sqlite:  # one statement: the token's consume a CTE of the instance's UPDATE
        for seen in endings:
            [statement] = [s for s in seen if "workflow_instances" in s]
            assert " ".join(statement.split()).startswith(
                "WITH consumed AS (UPDATE workflow_tokens"
            )
            assert "UPDATE workflow_instances" in statement
            assert not [s for s in seen if s.lstrip().startswith("UPDATE workflow_tokens")]
