"""Saga rollback registration (SPEC C-7) end to end on both backends: three
trigger nodes succeed against a real receiver (t1 and t3 declare a reverse
``compensation`` action, t2 does not), then t4 fails with ``sagaRollback``.
Exactly t3 and t1 — newest succeeded job first — get a ticket and a
``compensation_action`` job each, keyed by instance + node, whatever the
policy's own action; registering again creates nothing; a node whose
trigger job was skipped (it sent nothing) does not count."""

from __future__ import annotations

from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.compensation.saga import register_saga, saga_key
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.ledger.models import JobSpec, Outcome
from flowledger.settings import Settings
from flowledger.states import Pool
from tests.compensation.policy_flows import (
    ORDER,
    action_jobs,
    failure_policies,  # noqa: F401  (autouse: the policies are the engine's hooks)
    history_kinds,
    path,
    requests_to,
    saga,
    saga_detour,
    tickets_of,
    undo_body,
)
from tests.integration.engine_helpers import (
    instance,
    jobs,
    pending_task,
    run_due_jobs,
    tasks,
    tokens,
    trace_events,
)
from tests.integration.ledger_helpers import attempt_rows
from tests.ledger_access import ledger_of
from tests.outbound.receivers import Receiver
from tests.runtime_support import job_types_for_tests


def _failing(action: str) -> dict[str, Any]:
    return {"maxRetries": 0, "failurePolicy": {"action": action, "sagaRollback": True}}


async def _saga_tickets(db: Database, iid: int) -> list[dict[str, Any]]:
    return [t for t in await tickets_of(db, iid) if t["kind"] == "saga"]


async def _succeeded_triggers(db: Database, iid: int) -> list[dict[str, Any]]:
    return [j for j in await jobs(db, iid, type="trigger_dispatch") if j["status"] == "succeeded"]


@pytest.mark.parametrize("action", ["notify", "terminate"])
async def test_saga_registers_the_reverse_actions_newest_first_once_C7(
    action: str,
    db: Database,
    clock: ManualClock,
    engine: Engine,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.routes[path("t4")] = 422
    await engine.deploy(saga(receiver, _failing(action)), actor="dev")
    iid = await engine.start("saga", form={"orderId": ORDER}, initiator="ann")
    await run_due_jobs(db, clock)

    succeeded = await _succeeded_triggers(db, iid)
    assert [j["node_key"] for j in succeeded] == ["t1", "t2", "t3"]
    sagas = await _saga_tickets(db, iid)
    assert [t["node_key"] for t in sagas] == ["t3", "t1"]  # job id descending
    (t4_ticket,) = [t for t in await tickets_of(db, iid) if t["kind"] != "saga"]
    assert t4_ticket["kind"] == action and t4_ticket["id"] > sagas[-1]["id"]
    for ticket in sagas:
        assert (ticket["failed_node_key"], ticket["status"]) == ("t4", "pending")
        assert ticket["idempotency_key"] == saga_key(iid, ticket["node_key"])
        assert ticket["error"] == t4_ticket["error"] and "422" in ticket["error"]
        assert ticket["repair_task_id"] is None
        # the action ran; its success does not close the ticket (C-5)
        assert ticket["compensation_action_status"] == "succeeded"
        assert await history_kinds(db, ticket["id"]) == ["created"] + ["action_result"] * 3

    actions = await action_jobs(db, iid)
    assert [j["node_key"] for j in actions] == ["t3", "t1"]
    assert [j["id"] for j in actions] == [t["action_job_id"] for t in sagas]
    assert [j["idempotency_key"] for j in actions] == [saga_key(iid, "t3"), saga_key(iid, "t1")]
    assert all(j["status"] == "succeeded" for j in actions)
    undone = {r.path: r for r in requests_to(receiver, "/undo/")}
    assert sorted(undone) == ["/undo/t1/A%2F1", "/undo/t3/A%2F1"]
    for key in ("t1", "t3"):
        assert undone[f"/undo/{key}/A%2F1"].body == undo_body(iid, key, sagas[0]["error"])
    registered = [e for e in await trace_events(db, iid) if e["event"] == "saga_registered"]
    assert [e["node_key"] for e in registered] == ["t3", "t1"]

    row = await instance(db, iid)
    if action == "terminate":  # rejected, and the rollback still ran
        assert row["status"] == "rejected" and t4_ticket["status"] == "terminated"
        assert await tokens(db, iid, "active") == []
    else:
        assert row["status"] == "running" and t4_ticket["status"] == "pending"
        assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["t4"]
        assert [t["assignee"] for t in await tasks(db, iid, kind="catch")] == ["alice", "bob"]

    # registering again in a new step creates nothing new
    async with db.begin() as conn, engine.step(conn, iid, "system") as step:
        again = await register_saga(step, step.defn.node("t4"), error="again")
    assert again == [t["id"] for t in sagas]
    assert [t["id"] for t in await _saga_tickets(db, iid)] == again
    assert [j["id"] for j in await action_jobs(db, iid)] == [j["id"] for j in actions]
    await run_due_jobs(db, clock)
    assert len(requests_to(receiver, "/undo/")) == 2


async def test_a_second_failing_node_registers_nothing_new_C7(
    db: Database,
    clock: ManualClock,
    engine: Engine,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.routes[path("t4")] = 422
    receiver.routes[path("t5")] = 422
    await engine.deploy(saga(receiver, _failing("continue"), _failing("notify")), actor="dev")
    iid = await engine.start("saga", form={"orderId": ORDER}, initiator="ann")
    await run_due_jobs(db, clock)

    assert [(t["kind"], t["node_key"], t["status"]) for t in await tickets_of(db, iid)] == [
        ("saga", "t3", "pending"),
        ("saga", "t1", "pending"),
        ("continue", "t4", "resolved"),
        ("notify", "t5", "pending"),
    ]
    assert [j["node_key"] for j in await action_jobs(db, iid)] == ["t3", "t1"]
    assert sorted(r.path for r in requests_to(receiver, "/undo/")) == [
        "/undo/t1/A%2F1",
        "/undo/t3/A%2F1",
    ]
    registered = [e for e in await trace_events(db, iid) if e["event"] == "saga_registered"]
    assert [(e["node_key"], e["detail"]["failedNodeKey"]) for e in registered] == [
        ("t3", "t4"),
        ("t1", "t4"),
    ]
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["t5"]


async def test_a_skipped_trigger_job_does_not_count_C7(
    db: Database,
    clock: ManualClock,
    engine: Engine,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.routes[path("t4")] = 422
    await engine.deploy(saga_detour(receiver, _failing("notify")), actor="dev")
    iid = await engine.start("detour", form={"orderId": ORDER}, initiator="ann")
    (t2_job,) = await jobs(db, iid, type="trigger_dispatch")
    assert t2_job["node_key"] == "t2"
    # returned to the initiator before t2's job ran: the job skips, sending nothing
    await engine.return_to_initiator(iid, actor="ann", reason="wrong route")
    await run_due_jobs(db, clock)
    (t2_job,) = await jobs(db, iid, type="trigger_dispatch")
    assert t2_job["status"] == "succeeded"
    assert [a.status for a in await attempt_rows(db, t2_job["id"])] == ["skipped"]
    assert requests_to(receiver, "/t2/") == []

    # resubmitted along the other route: t1 succeeds, t4 fails
    resubmit = await pending_task(db, iid, "start", "ann")
    await engine.handle(resubmit, actor="ann", form={"second": True})
    await run_due_jobs(db, clock)
    assert [j["node_key"] for j in await _succeeded_triggers(db, iid)] == ["t2", "t1"]
    assert [t["node_key"] for t in await _saga_tickets(db, iid)] == ["t1"]
    assert [j["node_key"] for j in await action_jobs(db, iid)] == ["t1"]
    assert [r.path for r in requests_to(receiver, "/undo/")] == ["/undo/t1/A%2F1"]


async def _succeeded_job(
    db: Database, clock: ManualClock, iid: int, job_type: str, node_key: str
) -> int:
    """A job of ``job_type`` at ``node_key`` that ran and succeeded (claimed
    and settled through the ledger, without its handler)."""
    async with db.begin() as conn:
        spec = JobSpec(type=job_type, instance_id=iid, node_key=node_key, tenant_id="default")
        job_id = (
            await ledger_of(conn).job_insert(
                conn, spec, now=clock.now(), job_types=job_types_for_tests()
            )
        ).job_id
    claimed = await ledger_of(db).jobs_claim(
        db, pool=Pool.OUTBOUND, limit=10, node_id="t", now=clock.now()
    )
    (job,) = [j for j in claimed if j.id == job_id]
    await ledger_of(db).jobs_settle(db, [(job, Outcome.success({"status": 200}))], now=clock.now())
    return job_id


async def test_webhook_and_external_dispatch_jobs_count_each_node_once_C7(
    db: Database,
    clock: ManualClock,
    engine: Engine,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    # C-7 looks at trigger_dispatch, external_dispatch and webhook_delivery
    # jobs alike, newest job id first, each node once
    receiver.routes[path("t4")] = 422
    no_saga = {"maxRetries": 0, "failurePolicy": {"action": "notify"}}
    await engine.deploy(saga(receiver, no_saga), actor="dev")
    iid = await engine.start("saga", form={"orderId": ORDER}, initiator="ann")
    await run_due_jobs(db, clock)
    assert await _saga_tickets(db, iid) == []  # no sagaRollback on t4
    # after the triggers: a delivery attributed to t1, a dispatch at t2 (no
    # compensation declared), and a second job at t1
    await _succeeded_job(db, clock, iid, "webhook_delivery", "t1")
    await _succeeded_job(db, clock, iid, "external_dispatch", "t2")
    await _succeeded_job(db, clock, iid, "webhook_delivery", "t1")
    async with db.begin() as conn, engine.step(conn, iid, "system") as step:
        registered = await register_saga(step, step.defn.node("t4"), error="boom")
    sagas = await _saga_tickets(db, iid)
    assert [t["id"] for t in sagas] == registered
    assert [t["node_key"] for t in sagas] == ["t1", "t3"]  # t1's newest job is the newest
    assert [j["node_key"] for j in await action_jobs(db, iid)] == ["t1", "t3"]
