"""Tickets and the admin repair task (SPEC C-3, C-8): a repair ticket holds
the failed node's token for a catch task per administrator while the
instance keeps running; with no administrator the instance is rejected with
the reason recorded; ticket idempotency keys deduplicate (C-7's use)."""

from __future__ import annotations

import pytest

from flowledger.clock import ManualClock
from flowledger.compensation.admins import parse_admin_users, resolve_admins
from flowledger.compensation.tickets import open_ticket
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.errors import ConfigurationError
from tests.compensation.flows import deploy, failed_instance, history, repair_at, ticket
from tests.integration.engine_helpers import (
    instance,
    pending_task,
    run_due_jobs,
    tasks,
    tokens,
    trace_events,
)


def test_admin_setting_parses_per_tenant_C3() -> None:
    assert parse_admin_users(" a:x|y ; *:root;b: ") == {"a": ["x", "y"], "*": ["root"], "b": []}
    with pytest.raises(ConfigurationError):
        parse_admin_users("nocolon")


async def test_admins_from_setting_wildcard_then_role_C3(
    db: Database, engine: Engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flowledger.api.auth import create_user

    async with db.begin() as conn:
        now = engine.clock.now()
        await create_user(conn, "rita", roles=["workflow_admin"], tenants=["t2"], now=now)
        await create_user(conn, "sam", roles=["workflow_admin"], tenants=["*"], now=now)
        await create_user(conn, "tom", roles=["clerk"], tenants=["t2"], now=now)
        assert await resolve_admins(conn, "t1", "t1:x|y;*:z") == ["x", "y"]
        assert await resolve_admins(conn, "t9", "t1:x|y;*:z") == ["z"]
        assert await resolve_admins(conn, "t2", "t1:x") == ["rita", "sam"]
        assert await resolve_admins(conn, "t3", "") == ["sam"]


async def test_repair_task_holds_token_at_failed_node_instance_running_C3_C8(
    db: Database, engine: Engine, clock: ManualClock
) -> None:
    await deploy(engine)
    iid = await failed_instance(engine, db, clock)
    ticket_id = await repair_at(engine, iid, action={"type": "email", "recipients": ["o@x.io"]})
    assert ticket_id is not None
    row = await ticket(db, ticket_id)
    repair = await tasks(db, iid, node_key="sub", kind="catch")
    assert [(t["assignee"], t["status"]) for t in repair] == [
        ("alice", "pending"),
        ("bob", "pending"),
    ]
    [token] = await tokens(db, iid, state="active")
    assert token["node_key"] == "sub" and {t["token_id"] for t in repair} == {token["id"]}
    assert (await instance(db, iid))["status"] == "running"
    assert row["status"] == "pending" and row["compensation_action_status"] == "none"
    assert (row["failed_node_key"], row["node_key"], row["kind"]) == ("sub", "sub", "notify")
    assert row["repair_task_id"] == repair[0]["id"]
    assert row["action_payload"] == {"type": "email", "recipients": ["o@x.io"]}
    assert row["error"] == "child instance was rejected"
    [created] = await history(db, ticket_id)
    assert created["kind"] == "created" and created["detail"]["repairTaskId"] == repair[0]["id"]
    events = [e["event"] for e in await trace_events(db, iid)]
    assert "compensation_ticket_opened" in events


async def test_other_branches_keep_moving_while_repair_is_pending_C3(
    db: Database, engine: Engine, clock: ManualClock
) -> None:
    await deploy(engine, parallel=True)
    iid = await failed_instance(engine, db, clock)
    assert await repair_at(engine, iid) is not None
    await engine.handle(await pending_task(db, iid, "desk"), actor="hal")
    assert (await instance(db, iid))["status"] == "running"
    parked = await tokens(db, iid, state="parked")
    assert [t["node_key"] for t in parked] == ["join"]
    assert [t["node_key"] for t in await tokens(db, iid, state="active")] == ["sub"]


async def test_no_administrator_rejects_instance_with_reason_C3(
    db: Database, engine: Engine, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("FLOWLEDGER_ADMIN_USERS", "")
    await deploy(engine, tenant="lonely")
    iid = await failed_instance(engine, db, clock, tenant="lonely")
    assert await repair_at(engine, iid) is None
    row = await instance(db, iid)
    assert row["status"] == "rejected"
    assert "no administrator could be resolved" in row["error"]
    assert await tokens(db, iid, state="active") == []
    finished = [e for e in await trace_events(db, iid) if e["event"] == "instance_finished"]
    assert "no administrator" in finished[-1]["detail"]["reason"]
    assert await run_due_jobs(db, clock) == 0


async def test_ticket_idempotency_key_returns_existing_C7_C8(
    db: Database, engine: Engine, clock: ManualClock
) -> None:
    await deploy(engine)
    iid = await failed_instance(engine, db, clock)
    args = dict(
        tenant_id="default",
        instance_id=iid,
        failed_node_key="sub",
        node_key="erp",
        kind="saga",
        error="x",
        action=None,
        repair_task_id=None,
        idempotency_key=f"saga:{iid}:erp",
        actor="system",
        now=clock.now(),
    )
    async with db.begin() as conn:
        first = await open_ticket(conn, **args)  # type: ignore[arg-type]
        again = await open_ticket(conn, **args)  # type: ignore[arg-type]
        closed = await open_ticket(
            conn,
            **{**args, "idempotency_key": None, "status": "resolved"},  # type: ignore[arg-type]
        )
    assert first == (first[0], True) and again == (first[0], False)
    assert len(await history(db, first[0])) == 1
    row = await ticket(db, closed[0])
    assert (row["status"], row["resolved_by"]) == ("resolved", "system")
    assert row["resolved_at"] == clock.now()


async def test_handling_the_repair_task_resolves_its_ticket_C3_C8(
    db: Database, engine: Engine, clock: ManualClock
) -> None:
    from flowledger.compensation.repair import resolve_for_repair_task

    await deploy(engine)
    iid = await failed_instance(engine, db, clock)
    ticket_id = await repair_at(engine, iid)
    assert ticket_id is not None
    task_id = (await ticket(db, ticket_id))["repair_task_id"]
    # the catch task continues past the node; the engine's repair hook
    # (installed by the failure policies) resolves the ticket in that step
    await engine.handle(task_id, actor="alice")
    assert [t["node_key"] for t in await tokens(db, iid, state="active")] == ["after"]
    async with db.begin() as conn, engine.step(conn, iid, "alice") as step:
        assert await resolve_for_repair_task(step, task_id) is None  # nothing left pending
    row = await ticket(db, ticket_id)
    assert (row["status"], row["resolved_by"]) == ("resolved", "alice")
    assert (await history(db, ticket_id))[-1]["kind"] == "resume"


async def test_ending_the_instance_terminates_its_repair_tickets_only_C3_C8(
    db: Database, engine: Engine, clock: ManualClock
) -> None:
    # a canceled instance cannot be repaired: its repair ticket is terminated
    # with the reason; a ticket without a repair task (a Saga or fallback
    # action) stays pending for an operator to check its reverse action
    await deploy(engine)
    iid = await failed_instance(engine, db, clock)
    repair_id = await repair_at(engine, iid)
    assert repair_id is not None
    async with db.begin() as conn:
        saga_id, _ = await open_ticket(
            conn,
            tenant_id="default",
            instance_id=iid,
            failed_node_key="sub",
            node_key="earlier",
            kind="saga",
            error="boom",
            action=None,
            repair_task_id=None,
            idempotency_key=None,
            actor="system",
            now=clock.now(),
        )
    await engine.cancel(iid, actor="ops", reason="customer withdrew")
    repair = await ticket(db, repair_id)
    assert (repair["status"], repair["resolved_by"]) == ("terminated", "ops")
    last = (await history(db, repair_id))[-1]
    assert last["kind"] == "terminate" and "canceled" in last["message"]
    assert (await ticket(db, saga_id))["status"] == "pending"
