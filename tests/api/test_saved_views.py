"""Saved views (SPEC O-1): a named filter set per user and scope, private
or shared with the tenant, one default per user and scope (a new default
clears the old one, also when two are set at once), filters validated
against the scope's filter model (422 naming ``filters.<key>``), another
user's private view 404, only the owner changes or deletes, mutations
audited, other tenants invisible."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flowledger.db.engine_schema import operation_audit
from flowledger.db.monitor_schema import workflow_saved_views
from tests.api.conftest import Api, People

MONITOR = "workflow:instance:monitor"


async def _create(api: Api, who: dict[str, str], **body: Any) -> dict[str, Any]:
    body.setdefault("scope", "instances")
    body.setdefault("name", "stuck leave")
    response = await api.post("/views", who, body)
    assert response.status_code == 201, response.text
    return dict(response.json())


async def _patch(api: Api, who: dict[str, str], view_id: int, body: dict[str, Any]) -> Any:
    return await api.client.patch(f"/api/workflows/views/{view_id}", headers=who, json=body)


async def test_create_read_list_update_delete_O1(api: Api, people: People) -> None:
    filters = {"definitionKey": "leave", "status": ["running"], "stuckMinutes": 60}
    view = await _create(api, people.mon, filters=filters)
    assert view["owner"] == "mon" and view["tenant"] == "default"
    assert view["filters"] == filters and view["shared"] is False and view["isDefault"] is False
    read = await api.get(f"/views/{view['id']}", people.mon)
    assert read.status_code == 200 and read.json() == view
    health = await _create(
        api,
        people.mon,
        scope="health",
        name="critical",
        filters={"thresholdMinutes": 30, "rule": "delay_overdue", "level": "critical"},
    )
    listed = (await api.get("/views", people.mon)).json()["items"]
    assert {v["id"] for v in listed} == {view["id"], health["id"]}
    only = (await api.get("/views", people.mon, scope="health")).json()["items"]
    assert [v["id"] for v in only] == [health["id"]]
    changed = await _patch(
        api, people.mon, view["id"], {"name": "renamed", "filters": {"hasError": True}}
    )
    assert changed.status_code == 200, changed.text
    assert changed.json()["name"] == "renamed" and changed.json()["filters"] == {"hasError": True}
    deleted = await api.client.delete(f"/api/workflows/views/{view['id']}", headers=people.mon)
    assert deleted.status_code == 204
    assert (await api.get(f"/views/{view['id']}", people.mon)).status_code == 404
    actions = [r["action"] for r in await api.rows(operation_audit)]
    assert actions == ["view.create", "view.create", "view.update", "view.delete"]
    # null is refused on each field (it was ignored with a 200)
    for field in ("name", "filters", "shared", "isDefault"):
        refused = await _patch(api, people.mon, health["id"], {field: None})
        assert refused.status_code == 422, refused.text
        assert refused.json()["field"] == f"body.{field}"
    assert (await api.get(f"/views/{health['id']}", people.mon)).json()["name"] == "critical"


@pytest.mark.parametrize(
    ("scope", "filters", "field"),
    [
        ("instances", {"bogus": 1}, "filters.bogus"),
        ("instances", {"status": ["sleeping"]}, "filters.status"),
        ("instances", {"stuckMinutes": 0}, "filters.stuckMinutes"),
        ("instances", {"createdFrom": "2026-01-01T00:00:00"}, "filters.createdFrom"),
        ("jobs", {"status": ["gone"]}, "filters.status"),
        ("jobs", {"fingerprint": "XYZ"}, "filters.fingerprint"),
        ("jobs", {"stuckMinutes": 5}, "filters.stuckMinutes"),
        ("tasks", {"status": "asleep"}, "filters.status"),
        ("health", {"thresholdMinutes": 5}, "filters.thresholdMinutes"),
        ("health", {"thresholdMinutes": 1441}, "filters.thresholdMinutes"),
        ("health", {"rule": "no_such_rule"}, "filters.rule"),
        ("health", {"level": "info"}, "filters.level"),
        ("health", {"status": ["running"]}, "filters.status"),
    ],
)
async def test_filters_are_validated_against_the_scope_O1(
    api: Api, people: People, scope: str, filters: dict[str, Any], field: str
) -> None:
    response = await api.post(
        "/views", people.mon, {"name": "x", "scope": scope, "filters": filters}
    )
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    assert response.json()["code"] == "filters_invalid"
    assert await api.count(workflow_saved_views) == 0


async def test_valid_filters_of_every_scope_are_kept_O1(api: Api, people: People) -> None:
    cases = {
        "jobs": {"type": ["webhook_delivery"], "status": ["dead"], "keyword": "timeout"},
        "tasks": {"assignee": "mia", "status": "pending"},
        "health": {"thresholdMinutes": 10, "rule": "instance_stalled", "definitionKey": "leave"},
        "instances": {"keyword": "50%", "currentNode": "manager", "sort": "updated"},
    }
    for scope, filters in cases.items():
        view = await _create(api, people.mon, scope=scope, name=scope, filters=filters)
        assert view["filters"] == filters
    # a list filter also takes the query parameter's comma-separated form
    text = await _create(api, people.mon, name="text", filters={"status": "running,suspended"})
    assert text["filters"] == {"status": ["running", "suspended"]}


async def test_one_default_per_user_and_scope_O1(api: Api, people: People) -> None:
    first = await _create(api, people.mon, name="first", isDefault=True)
    second = await _create(api, people.mon, name="second", isDefault=True)
    other_scope = await _create(api, people.mon, scope="jobs", name="jobs", isDefault=True)
    views = {v["id"]: v for v in (await api.get("/views", people.mon)).json()["items"]}
    assert views[first["id"]]["isDefault"] is False
    assert views[second["id"]]["isDefault"] is True
    assert views[other_scope["id"]]["isDefault"] is True
    back = await _patch(api, people.mon, first["id"], {"isDefault": True})
    assert back.status_code == 200 and back.json()["isDefault"] is True
    views = {v["id"]: v for v in (await api.get("/views", people.mon)).json()["items"]}
    assert views[second["id"]]["isDefault"] is False
    # another user's default is their own
    theirs = await _create(api, people.ops, name="ops default", isDefault=True)
    assert theirs["isDefault"] is True
    assert (await api.get(f"/views/{first['id']}", people.mon)).json()["isDefault"] is True


async def test_concurrent_defaults_leave_exactly_one_O1(api: Api, people: People) -> None:
    views = [await _create(api, people.mon, name=f"v{n}") for n in range(4)]
    results = await asyncio.gather(
        *(_patch(api, people.mon, v["id"], {"isDefault": True}) for v in views)
    )
    assert all(r.status_code == 200 for r in results), [r.text for r in results]
    rows = await api.rows(workflow_saved_views)
    assert sum(1 for r in rows if r["is_default"]) == 1


async def test_private_is_404_shared_is_readable_but_owner_only_O1(
    api: Api, people: People
) -> None:
    private = await _create(api, people.mon, name="mine")
    shared = await _create(api, people.mon, name="team", shared=True)
    assert (await api.get(f"/views/{private['id']}", people.ops)).status_code == 404
    assert (await _patch(api, people.ops, private["id"], {"name": "x"})).status_code == 404
    gone = await api.client.delete(f"/api/workflows/views/{private['id']}", headers=people.ops)
    assert gone.status_code == 404
    listed = [v["id"] for v in (await api.get("/views", people.ops)).json()["items"]]
    assert listed == [shared["id"]]
    assert (await api.get(f"/views/{shared['id']}", people.ops)).status_code == 200
    refused = await _patch(api, people.ops, shared["id"], {"name": "taken over"})
    assert refused.status_code == 403
    refused_delete = await api.client.delete(
        f"/api/workflows/views/{shared['id']}", headers=people.ops
    )
    assert refused_delete.status_code == 403
    assert (await api.get(f"/views/{shared['id']}", people.mon)).json()["name"] == "team"
    # shared views of another tenant are not visible
    olga = await api.token("olga", MONITOR, tenants=("other",))
    assert (await api.get(f"/views/{shared['id']}", olga)).status_code == 404
    assert (await api.get("/views", olga)).json()["items"] == []
    outside = await api.post("/views", olga, {"name": "x", "scope": "jobs", "tenant": "default"})
    assert outside.status_code == 403


async def test_permissions_per_scope_A2(api: Api, people: People) -> None:
    # task:act may keep task views, not monitoring ones
    mine = await _create(api, people.mia, scope="tasks", name="my pending")
    refused = await api.post("/views", people.mia, {"name": "x", "scope": "instances"})
    assert refused.status_code == 403
    assert refused.json()["permission"] == MONITOR
    listed = (await api.get("/views", people.mia)).json()["items"]
    assert [v["id"] for v in listed] == [mine["id"]]
    assert (await api.get("/views", people.mia, scope="jobs")).status_code == 403
    assert (await api.get("/views", people.dev)).status_code == 403
    bad_name = await api.post("/views", people.mon, {"name": "", "scope": "jobs"})
    assert bad_name.status_code == 422 and bad_name.json()["field"] == "body.name"
    bad_scope = await api.post("/views", people.mon, {"name": "x", "scope": "nope"})
    assert bad_scope.status_code == 422 and bad_scope.json()["field"] == "body.scope"
