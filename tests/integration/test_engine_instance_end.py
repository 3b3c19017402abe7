"""Ending an instance (SPEC E-6, L-22; issue 15 item 2), on both backends:
the instance row gets its terminal status and finish time, and its open
tasks are closed with it — on PostgreSQL the tasks to close and the live
advancement jobs to cancel (L-22) come back from the instance's own UPDATE,
so the ending reads them in no statement of its own, and locks jobs only
when there are some to cancel; the compensation hook runs only when the
instance has a pending repair ticket, which the same UPDATE reads."""

from __future__ import annotations

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from tests import statement_watch
from tests.integration.engine_helpers import (
    forked_approvals,
    instance,
    new_engine,
    tasks,
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
