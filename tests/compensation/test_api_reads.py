"""Ticket list and detail (SPEC C-9, A-2, A-3): filters by status and
instance within the visible tenants, keyset paging, the detail's history
timeline, action job and repair tasks; monitor permission (403) and other
tenants' tickets (404)."""

from __future__ import annotations

from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.clock import ManualClock
from flowledger.compensation import operations
from flowledger.db.database import Database
from flowledger.engine import Engine
from tests.api.conftest import Api, People
from tests.compensation.flows import deploy, failed_instance, repair_at

EMAIL = {"type": "email", "recipients": ["ops@example.com"]}


async def _tickets(engine: Engine, db: Database, clock: ManualClock) -> dict[str, int]:
    await deploy(engine)
    await deploy(engine, tenant="other")
    ids: dict[str, int] = {}
    for name, tenant in (("a", "default"), ("b", "default"), ("c", "other")):
        ids[f"{name}_instance"] = await failed_instance(engine, db, clock, tenant=tenant)
    for name in ("a", "b", "c"):  # no job runs from here on
        ticket_id = await repair_at(
            engine, ids[f"{name}_instance"], action=EMAIL, enqueue=name == "a"
        )
        assert ticket_id is not None
        ids[name] = ticket_id
    await operations.release(engine, ids["b"], actor="ops")
    return ids


async def test_list_filters_status_and_instance_within_tenants_C9_A3(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    ids = await _tickets(engine, db, clock)
    everything = await api.get("/compensation/list", people.root)
    assert [t["id"] for t in everything.json()["items"]] == [ids["c"], ids["b"], ids["a"]]
    mine = await api.get("/compensation/list", people.ops)
    assert [t["id"] for t in mine.json()["items"]] == [ids["b"], ids["a"]]
    pending = await api.get("/compensation/list", people.ops, status="pending")
    [item] = pending.json()["items"]
    assert item["id"] == ids["a"] and item["status"] == "pending"
    assert item["failedNodeKey"] == "sub" and item["compensationActionStatus"] == "pending"
    by_instance = await api.get("/compensation/list", people.mon, instanceId=ids["b_instance"])
    assert [t["id"] for t in by_instance.json()["items"]] == [ids["b"]]
    other = await api.get("/compensation/list", people.ops, instanceId=ids["c_instance"])
    assert other.json()["items"] == []
    first = await api.get("/compensation/list", people.root, limit=2)
    assert len(first.json()["items"]) == 2 and first.json()["next"]
    rest = await api.get("/compensation/list", people.root, limit=2, cursor=first.json()["next"])
    assert [t["id"] for t in rest.json()["items"]] == [ids["a"]] and rest.json()["next"] is None
    bad = await api.get("/compensation/list", people.root, status="open")
    assert bad.status_code == 422 and bad.json()["code"] == "validation_error"


async def test_detail_has_error_action_job_repair_tasks_and_history_C9(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    ids = await _tickets(engine, db, clock)
    response = await api.get(f"/compensation/{ids['a']}", people.mon)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["error"] == "child instance was rejected"
    assert body["actionPayload"] == EMAIL and body["instanceStatus"] == "running"
    assert body["actionJob"]["status"] == "pending" and body["actionJob"]["maxAttempts"] == 4
    assert [(t["assignee"], t["status"]) for t in body["repairTasks"]] == [
        ("alice", "pending"),
        ("bob", "pending"),
    ]
    assert [h["kind"] for h in body["history"]] == ["created", "action_result"]
    released = (await api.get(f"/compensation/{ids['b']}", people.mon)).json()
    assert released["status"] == "resolved" and released["resolvedBy"] == "ops"
    assert [h["kind"] for h in released["history"]] == ["created", "release"]


async def test_reading_needs_monitor_permission_A2(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    ids = await _tickets(engine, db, clock)
    operator = await api.token("opal", ENGINE_OPERATE)
    for path in ("/compensation/list", f"/compensation/{ids['a']}"):
        for headers in (people.ann, operator):
            response = await api.get(path, headers)
            assert response.status_code == 403, response.text
            assert response.json()["permission"] == INSTANCE_MONITOR


async def test_other_tenants_ticket_is_not_found_A3(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    ids = await _tickets(engine, db, clock)
    otto = await api.token("otto", INSTANCE_MONITOR, ENGINE_OPERATE, tenants=("other",))
    assert (await api.get(f"/compensation/{ids['c']}", otto)).status_code == 200
    for ticket_id in (ids["a"], 999_999):
        response = await api.get(f"/compensation/{ticket_id}", otto)
        assert response.status_code == 404
        assert response.json()["code"] == "compensation_not_found"
