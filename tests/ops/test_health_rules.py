"""The health inspection rules (SPEC O-16), each on both backends: the
condition is made by the engine where it arises naturally (a delay or a
timeout whose worker is not running, a trigger or external dispatch whose
real 127.0.0.1 receiver fails or is never called, a gateway that matches
nothing) and by a direct write where only a crash could cause it (a lost
wake job, a consumed token, a failed outbox row). Each test checks rule,
level, instance, task, node and job. Plus the threshold (younger than T is
not reported, older is) and one-problem-per-task."""

from __future__ import annotations

import pytest
from sqlalchemy import delete, update

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox
from flowledger.db.schema import workflow_jobs
from flowledger.settings import Settings
from tests.integration.engine_helpers import jobs, new_engine, run_due_jobs, tasks, tokens
from tests.ops.health_support import (
    approval_flow,
    consume_tokens,
    dead_end_flow,
    delay_flow,
    external_flow,
    flush_events,
    inspection,
    run_and_flush,
    subprocess_flow,
    summary,
    trigger_flow,
)
from tests.outbound import conftest as outbound_fixtures
from tests.outbound.receivers import Receiver

receiver = outbound_fixtures.receiver
other_receiver = outbound_fixtures.other_receiver
outbound_env = outbound_fixtures.outbound_env

MIN = 60


async def test_waiting_task_stuck_only_past_the_threshold_O16(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(approval_flow(), actor="a")
    iid = await engine.start("leave", form={}, initiator="u")
    await flush_events(db, clock)
    (task,) = await tasks(db, iid, node_key="manager")
    clock.advance(seconds=29 * MIN)
    assert await inspection(db, clock) == []
    clock.advance(seconds=2 * MIN)
    (problem,) = await inspection(db, clock)
    assert summary([problem]) == [
        ("waiting_task_stuck", "warning", iid, task["id"], "manager", None)
    ]
    assert problem.since == task["created_at"] and problem.detail == "alice"
    # a larger threshold hides it again
    assert await inspection(db, clock, threshold_min=60) == []


async def test_delay_overdue_when_no_worker_runs_its_wake_job_O16(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(delay_flow(duration="PT10M"), actor="a")
    iid = await engine.start("wait", form={}, initiator="u")
    await flush_events(db, clock)
    (task,) = await tasks(db, iid, node_key="pause")
    (job,) = await jobs(db, iid, type="delay_wake")
    clock.advance(seconds=10 * MIN + 30)  # due, within the claim grace
    assert await inspection(db, clock, threshold_min=1440) == []
    clock.advance(seconds=2 * MIN)
    (problem,) = await inspection(db, clock, threshold_min=1440)
    assert summary([problem]) == [
        ("delay_overdue", "critical", iid, task["id"], "pause", job["id"])
    ]
    assert problem.since == job["run_at"]
    # a worker runs it: the delay wakes and the problem is gone
    await run_and_flush(db, clock)
    assert await inspection(db, clock, threshold_min=1440) == []


async def test_delay_missing_wake_job_after_the_job_is_lost_O16(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(delay_flow(duration="PT2H"), actor="a")
    iid = await engine.start("wait", form={}, initiator="u")
    await flush_events(db, clock)
    (task,) = await tasks(db, iid, node_key="pause")
    async with db.begin() as conn:  # only a crash or a bad hand-edit loses it
        await conn.execute(delete(workflow_jobs).where(workflow_jobs.c.instance_id == iid))
    (problem,) = await inspection(db, clock)
    assert summary([problem]) == [
        ("delay_missing_wake_job", "critical", iid, task["id"], "pause", None)
    ]


async def test_task_timeout_overdue_beats_waiting_task_stuck_O16(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    timeout = {"after": "PT15M", "action": "notify"}
    await engine.deploy(approval_flow(timeout=timeout), actor="a")
    iid = await engine.start("leave", form={}, initiator="u")
    await flush_events(db, clock)
    (task,) = await tasks(db, iid, node_key="manager")
    (job,) = await jobs(db, iid, type="task_timeout")
    clock.advance(seconds=40 * MIN)  # due 25 min ago, and the task is past 30 min
    (problem,) = await inspection(db, clock)
    assert summary([problem]) == [
        ("task_timeout_overdue", "warning", iid, task["id"], "manager", job["id"])
    ]
    await run_and_flush(db, clock)  # the notify timeout is handled
    assert summary(await inspection(db, clock)) == [
        ("waiting_task_stuck", "warning", iid, task["id"], "manager", None)
    ]


async def test_token_task_mismatch_and_one_problem_per_task_O16(
    db: Database, clock: ManualClock
) -> None:
    """The task matches token_task_mismatch, task_timeout_overdue and
    waiting_task_stuck: it is reported once, by the highest-priority rule."""
    engine = new_engine(db, clock)
    await engine.deploy(approval_flow(timeout={"after": "PT5M", "action": "notify"}), actor="a")
    iid = await engine.start("leave", form={}, initiator="u")
    await flush_events(db, clock)
    (task,) = await tasks(db, iid, node_key="manager")
    await consume_tokens(db, iid)
    clock.advance(seconds=29 * MIN)
    # younger than the threshold: only the overdue timeout shows
    assert [p.rule for p in await inspection(db, clock)] == ["task_timeout_overdue"]
    clock.advance(seconds=2 * MIN)
    problems = await inspection(db, clock)
    assert summary(problems) == [
        ("token_task_mismatch", "critical", iid, task["id"], "manager", None)
    ]


async def test_instance_stalled_at_a_gateway_that_matches_nothing_O16(
    db: Database, clock: ManualClock
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(dead_end_flow(), actor="a")
    iid = await engine.start("dead", form={"amount": 5}, initiator="u")
    await flush_events(db, clock)
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["route"]
    (problem,) = await inspection(db, clock)
    assert summary([problem]) == [("instance_stalled", "critical", iid, None, None, None)]


async def test_subprocess_waiting_past_the_threshold_O16(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    parent, kid = subprocess_flow()
    await engine.deploy(kid, actor="a")
    await engine.deploy(parent, actor="a")
    iid = await engine.start("parent", form={}, initiator="u")
    await run_and_flush(db, clock)  # the child is spawned and waits for its auditor
    (task,) = await tasks(db, iid, node_key="sub")
    (spawn,) = await jobs(db, iid, type="subprocess_spawn")
    clock.advance(seconds=20 * MIN)
    assert await inspection(db, clock) == []  # the child runs within the threshold
    clock.advance(seconds=11 * MIN)
    problems = await inspection(db, clock, instance_id=iid)
    assert summary(problems) == [
        ("subprocess_waiting", "warning", iid, task["id"], "sub", spawn["id"])
    ]
    assert problems[0].detail == str(iid + 1)  # the child instance


async def test_outbox_pending_and_failed_O16(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(approval_flow(), actor="a")
    pending = await engine.start("leave", form={}, initiator="u")  # no relay runs
    clock.advance(seconds=20 * MIN)
    failed = await engine.start("leave", form={}, initiator="u")
    async with db.begin() as conn:  # a poisonous event the dispatcher gave up on
        await conn.execute(
            update(workflow_event_outbox)
            .where(workflow_event_outbox.c.instance_id == failed)
            .values(status="failed")
        )
    clock.advance(seconds=11 * MIN)
    rules = {
        (p.rule, p.level, p.instance_id, p.task_id, p.job_id) for p in await inspection(db, clock)
    }
    assert ("workflow_event_outbox_pending", "warning", pending, None, None) in rules
    assert ("workflow_event_outbox_failed", "critical", failed, None, None) in rules
    # the failed instance's pending-for-11-minutes events are not reported
    assert ("workflow_event_outbox_pending", "warning", failed, None, None) not in rules


async def test_trigger_waiting_no_execution_when_no_worker_runs_it_O16(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(trigger_flow(receiver.url), actor="a")
    iid = await engine.start("erp", form={}, initiator="u")
    await flush_events(db, clock)
    (task,) = await tasks(db, iid, node_key="erp")
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    clock.advance(seconds=31 * MIN)
    assert summary(await inspection(db, clock, instance_id=iid)) == [
        ("trigger_waiting_no_execution", "critical", iid, task["id"], "erp", job["id"])
    ]


async def test_trigger_execution_failed_on_a_failing_receiver_O16(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    """A 500 to an unsafe POST: the L-17 dead letter, the token waits at the
    node; reported at once (no threshold)."""
    receiver.reply = 500
    engine = new_engine(db, clock)
    await engine.deploy(trigger_flow(receiver.url), actor="a")
    iid = await engine.start("erp", form={}, initiator="u")
    await run_and_flush(db, clock)
    (task,) = await tasks(db, iid, node_key="erp")
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    assert job["status"] == "dead" and len(receiver.requests) == 1
    (problem,) = await inspection(db, clock, instance_id=iid)
    assert summary([problem]) == [
        ("trigger_execution_failed", "critical", iid, task["id"], "erp", job["id"])
    ]
    assert problem.detail == "external_outcome_unconfirmed"


async def test_trigger_execution_failed_after_a_clear_refusal_O16(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    """A 400: the node fails for good, its task is closed, the token stays:
    the failed job is the problem, not a stalled instance (counted once)."""
    receiver.reply = 400
    engine = new_engine(db, clock)
    await engine.deploy(trigger_flow(receiver.url, maxRetries=0), actor="a")
    iid = await engine.start("erp", form={}, initiator="u")
    await run_and_flush(db, clock)
    (task,) = await tasks(db, iid, node_key="erp")
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    assert job["status"] == "dead" and task["status"] == "completed"
    assert summary(await inspection(db, clock, instance_id=iid)) == [
        ("trigger_execution_failed", "critical", iid, task["id"], "erp", job["id"])
    ]


async def test_external_dispatch_failed_and_pending_O16(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.reply = 400
    engine = new_engine(db, clock)
    await engine.deploy(external_flow(receiver.url, maxRetries=0), actor="a")
    failed = await engine.start("ext", form={}, initiator="u")
    await run_and_flush(db, clock)
    (task,) = await tasks(db, failed, node_key="partner")
    (job,) = await jobs(db, failed, type="external_dispatch")
    assert job["status"] == "dead"
    assert summary(await inspection(db, clock, instance_id=failed)) == [
        ("external_dispatch_failed", "critical", failed, task["id"], "partner", job["id"])
    ]

    waiting = await engine.start("ext", form={}, initiator="u")  # no worker dispatches it
    await flush_events(db, clock)
    (task,) = await tasks(db, waiting, node_key="partner")
    (job,) = await jobs(db, waiting, type="external_dispatch")
    clock.advance(seconds=29 * MIN)
    assert await inspection(db, clock, instance_id=waiting) == []
    clock.advance(seconds=2 * MIN)
    assert summary(await inspection(db, clock, instance_id=waiting)) == [
        ("external_dispatch_pending", "warning", waiting, task["id"], "partner", job["id"])
    ]


async def test_tenant_and_definition_scope_O16(db: Database, clock: ManualClock) -> None:
    engine = new_engine(db, clock)
    await engine.deploy(dead_end_flow(), actor="a")
    await engine.deploy(dead_end_flow("other"), actor="a")
    one = await engine.start("dead", form={"amount": 1}, initiator="u")
    two = await engine.start("other", form={"amount": 1}, initiator="u")
    await flush_events(db, clock)
    assert {p.instance_id for p in await inspection(db, clock)} == {one, two}
    assert [p.instance_id for p in await inspection(db, clock, definition_key="other")] == [two]
    assert await inspection(db, clock, tenants=["elsewhere"]) == []
    assert len(await inspection(db, clock, tenants=["default"])) == 2
    await run_due_jobs(db, clock)


async def test_a_failed_trigger_awaiting_manual_repair_is_still_reported_O16_C3(
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """onFailure retry, budget spent: a repair (catch) task for the
    administrator at the failed node; the failed job is still the problem."""
    monkeypatch.setenv("FLOWLEDGER_ADMIN_USERS", "*:ops")
    receiver.reply = 422
    engine = new_engine(db, clock)
    await engine.deploy(trigger_flow(receiver.url, onFailure="retry", maxRetries=0), actor="a")
    iid = await engine.start("erp", form={}, initiator="u")
    await run_and_flush(db, clock)
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    trigger_task, repair = await tasks(db, iid, node_key="erp")
    assert (repair["kind"], repair["status"], repair["assignee"]) == ("catch", "pending", "ops")
    assert summary(await inspection(db, clock, instance_id=iid)) == [
        ("trigger_execution_failed", "critical", iid, trigger_task["id"], "erp", job["id"])
    ]


async def test_a_dispatch_handed_to_people_is_not_a_failure_O16_X2(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    """dispatchFallback manual: approval tasks for the node's assignees
    decide instead; nothing is broken while they are younger than T."""
    receiver.reply = 400
    engine = new_engine(db, clock)
    flow = external_flow(
        receiver.url, maxRetries=0, dispatchFallback="manual", assignees={"users": ["alice"]}
    )
    await engine.deploy(flow, actor="a")
    iid = await engine.start("ext", form={}, initiator="u")
    await run_and_flush(db, clock)
    (job,) = await jobs(db, iid, type="external_dispatch")
    assert job["status"] == "dead"
    assert [t["assignee"] for t in await tasks(db, iid, status="pending")] == ["alice"]
    assert await inspection(db, clock, instance_id=iid) == []
