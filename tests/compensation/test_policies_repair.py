"""Manual repair (SPEC C-3) reached through the failure policies, on both
backends, with a real receiver refusing the trigger ``erp``: notify,
compensate and an exhausted retry keep the instance running with catch
tasks at ``erp`` holding its active token while a parallel branch (a delay,
then an approval) keeps moving; a ticket resume through the API continues
past ``erp``. With no administrator the instance is rejected with the
reason recorded. An unsafe write with an unknown outcome (L-17) applies no
policy at all."""

from __future__ import annotations

from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.settings import Settings
from tests.api.conftest import Api, People
from tests.compensation.policy_flows import (
    ORDER,
    action_jobs,
    failure_policies,  # noqa: F401  (autouse: the policies are the engine's hooks)
    linear,
    messages_to,
    parallel,
    path,
    requests_to,
    tickets_of,
    undo,
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
from tests.outbound.receivers import Receiver

REPAIRS = ["notify", "compensate", "retry"]


def _erp(receiver: Receiver, action: str, **policy: Any) -> dict[str, Any]:
    node: dict[str, Any] = {
        "maxRetries": 1 if action == "retry" else 0,
        "failurePolicy": {"action": action, **policy},
    }
    if action == "compensate":
        node["compensation"] = undo(receiver, "erp")
    return node


async def _fail_erp(db: Database, clock: ManualClock, action: str) -> None:
    await run_due_jobs(db, clock)
    if action == "retry":  # the second attempt, after the backoff
        clock.advance(seconds=30)
        await run_due_jobs(db, clock)


@pytest.mark.parametrize("action", REPAIRS)
async def test_repair_keeps_running_while_other_branches_move_then_resumes_C3_C9(
    action: str,
    db: Database,
    clock: ManualClock,
    engine: Engine,
    receiver: Receiver,
    outbound_env: Settings,
    api: Api,
    people: People,
) -> None:
    receiver.routes[path("erp")] = 422
    await engine.deploy(parallel(receiver, **_erp(receiver, action)), actor="dev")
    iid = await engine.start("orders", form={"orderId": ORDER}, initiator="ann")
    await _fail_erp(db, clock, action)
    assert len(requests_to(receiver, "/erp/")) == (2 if action == "retry" else 1)

    (ticket,) = await tickets_of(db, iid)
    assert (ticket["kind"], ticket["status"]) == (action, "pending")
    row = await instance(db, iid)
    assert row["status"] == "running"  # not the administrator's suspended state
    catch = await tasks(db, iid, kind="catch")
    assert [(t["node_key"], t["assignee"], t["status"]) for t in catch] == [
        ("erp", "alice", "pending"),
        ("erp", "bob", "pending"),
    ]
    erp_token = next(t for t in await tokens(db, iid, "active") if t["node_key"] == "erp")
    assert {t["token_id"] for t in catch} == {erp_token["id"]}
    assert ticket["repair_task_id"] == catch[0]["id"]
    assert len(await action_jobs(db, iid)) == (1 if action == "compensate" else 0)
    assert len(await messages_to(db, "alice", "bob")) == (2 if action == "notify" else 0)

    # the other branch is not frozen: its delay wakes and its approval completes
    (wake,) = await jobs(db, iid, type="delay_wake")
    assert wake["status"] == "pending"
    clock.advance(seconds=3600)
    await run_due_jobs(db, clock)
    assert (await jobs(db, iid, type="delay_wake"))[0]["status"] == "succeeded"
    await engine.approve(await pending_task(db, iid, "desk"), actor="mia")
    states = {(t["node_key"], t["state"]) for t in await tokens(db, iid)}
    assert ("join", "parked") in states and ("erp", "active") in states
    assert (await instance(db, iid))["status"] == "running"

    # the administrator's resume continues past erp: the join fires, the end is reached
    response = await api.post(f"/compensation/{ticket['id']}/resume", people.ops, {"reason": "ok"})
    assert response.status_code == 200, response.text
    assert response.json()["status"] == "resolved"
    row = await instance(db, iid)
    assert row["status"] == "approved"
    assert await tokens(db, iid, "active") == []
    assert [(t["assignee"], t["status"]) for t in await tasks(db, iid, kind="catch")] == [
        ("alice", "completed"),
        ("bob", "canceled"),
    ]


@pytest.mark.parametrize("action", REPAIRS)
async def test_no_administrator_rejects_the_instance_with_the_reason_C3(
    action: str,
    db: Database,
    clock: ManualClock,
    engine: Engine,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.routes[path("erp")] = 422
    await engine.deploy(parallel(receiver, **_erp(receiver, action)), actor="dev", tenant="lonely")
    iid = await engine.start("orders", form={"orderId": ORDER}, initiator="ann", tenant="lonely")
    await _fail_erp(db, clock, action)

    row = await instance(db, iid)
    assert row["status"] == "rejected"
    assert "no administrator could be resolved" in row["error"] and "422" in row["error"]
    assert await tokens(db, iid, "active") == []
    assert await tasks(db, iid, kind="catch") == []
    # the decision still leaves a ticket, terminated with the reason
    (ticket,) = await tickets_of(db, iid)
    assert (ticket["status"], ticket["kind"]) == ("terminated", action)
    assert "422" in ticket["error"]
    if action == "compensate":  # nobody can repair it, but the write is still undone
        (job,) = await action_jobs(db, iid)
        assert job["status"] == "succeeded"  # the reverse action ran
    else:
        assert await action_jobs(db, iid) == []
    (wake,) = await jobs(db, iid, type="delay_wake")
    assert wake["status"] == "canceled"  # L-22: the other branch stops too
    trace = await trace_events(db, iid)
    [no_admin] = [e for e in trace if e["event"] == "compensation_no_admin"]
    assert (no_admin["node_key"], no_admin["detail"]["kind"]) == ("erp", action)
    [finished] = [e for e in trace if e["event"] == "instance_finished"]
    assert finished["detail"]["status"] == "rejected"
    assert "no administrator" in finished["detail"]["reason"]


@pytest.mark.parametrize("action", ["notify", "compensate", "terminate"])
async def test_an_unknown_outcome_applies_no_policy_C1_L17(
    action: str,
    db: Database,
    clock: ManualClock,
    engine: Engine,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.routes[path("erp")] = 500  # an unsafe POST answered 500: did it happen?
    node = {"compensation": undo(receiver, "erp"), "maxRetries": 3}
    node["failurePolicy"] = {"action": action, "sagaRollback": True}
    await engine.deploy(linear(receiver, **node), actor="dev")
    iid = await engine.start("orders", form={"orderId": ORDER}, initiator="ann")
    await run_due_jobs(db, clock)
    clock.advance(seconds=3600)
    await run_due_jobs(db, clock)

    assert len(requests_to(receiver, "/erp/")) == 1  # never resent on its own
    (job,) = await jobs(db, iid, type="trigger_dispatch")
    assert (job["status"], job["last_error_code"]) == ("dead", "external_outcome_unconfirmed")
    row = await instance(db, iid)
    assert (row["status"], row["error"]) == ("running", None)
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["erp"]
    assert [(t["kind"], t["status"]) for t in await tasks(db, iid)] == [("trigger", "waiting")]
    assert await tickets_of(db, iid) == []
    assert await action_jobs(db, iid) == []
    assert requests_to(receiver, "/undo/") == []
    assert await messages_to(db, "alice", "bob") == []
    assert not [e for e in await trace_events(db, iid) if e["event"] == "node_failed"]
