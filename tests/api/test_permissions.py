"""Permissions and tenant scope, table-driven (SPEC A-2, A-3): every
endpoint refuses a caller without the permission it needs with 403 naming
that permission, and answers 404 — exactly as for a missing object — for an
object in a tenant the caller cannot see. Refused mutations change nothing.
(401 for a missing token: test_auth.py.)"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from flowledger.api.permissions import (
    ALL_PERMISSIONS,
    DEFINITION_MANAGE,
    ENGINE_OPERATE,
    INSTANCE_MONITOR,
    INSTANCE_START,
    TASK_ACT,
)
from tests.api.conftest import Api, approval

MANAGE, START, ACT, OPERATE, MONITOR = (
    DEFINITION_MANAGE,
    INSTANCE_START,
    TASK_ACT,
    ENGINE_OPERATE,
    INSTANCE_MONITOR,
)


def but(*missing: str) -> tuple[str, ...]:
    return tuple(p for p in ALL_PERMISSIONS if p not in missing)


@dataclass
class World:
    root: dict[str, str]
    instance: int
    task: int
    schedule: int

    def path(self, template: str) -> str:
        return template.format(instance=self.instance, task=self.task, schedule=self.schedule)


@pytest.fixture
async def world(api: Api) -> World:
    root = await api.admin()
    await api.deploy(root, approval())
    ann = await api.token("ann", START, ACT)
    instance = await api.start(ann)
    schedule = await api.post(
        "/schedules", root, {"definitionKey": "leave", "cron": "0 9 * * *", "form": {"days": 1}}
    )
    assert schedule.status_code == 201, schedule.text
    return World(root, instance["id"], instance["tasks"][0]["id"], schedule.json()["id"])


START_BODY = {"definitionKey": "leave", "form": {"days": 1}}
START_FOR_ANN = {**START_BODY, "initiator": "ann"}
HI = {"body": "hi"}
TO_MAX = {"to": "max"}
REASSIGN = {"to": "max", "reason": "r"}
RULE = {"definitionKey": "leave", "cron": "0 9 * * *"}
# (case id, caller's permissions, method, path, body, the permission named)
# fmt: off
FORBIDDEN: list[tuple[str, tuple[str, ...], str, str, Any, str]] = [
    ("deploy", but(MANAGE), "POST", "/definitions", {"definition": approval("x")}, MANAGE),
    ("list-definitions", (ACT,), "GET", "/definitions", None, MONITOR),
    ("list-versions", (ACT,), "GET", "/definitions/leave/versions", None, MONITOR),
    ("read-version", (ACT,), "GET", "/definitions/leave/versions/1", None, MONITOR),
    ("start", but(START), "POST", "/instances", START_BODY, START),
    ("start-for-other", (START, ACT), "POST", "/instances", START_FOR_ANN, OPERATE),
    ("list-instances", (START,), "GET", "/instances", None, MONITOR),
    ("list-others-instances", (ACT,), "GET", "/instances?initiator=ann", None, MONITOR),
    ("read-instance", (ACT,), "GET", "/instances/{instance}", None, MONITOR),
    ("suspend", but(OPERATE), "POST", "/instances/{instance}/suspend", {}, OPERATE),
    ("resume", but(OPERATE), "POST", "/instances/{instance}/resume", {}, OPERATE),
    ("cancel", but(OPERATE), "POST", "/instances/{instance}/cancel", {}, OPERATE),
    ("return", but(OPERATE), "POST", "/instances/{instance}/return", {}, OPERATE),
    ("withdraw-not-initiator", but(OPERATE), "POST", "/instances/{instance}/withdraw", {}, OPERATE),
    ("withdraw-no-act", (MONITOR,), "POST", "/instances/{instance}/withdraw", {}, ACT),
    ("comment-not-initiator", but(OPERATE), "POST", "/instances/{instance}/comments", HI, OPERATE),
    ("list-everyones-tasks", (ACT,), "GET", "/tasks?assignee=*", None, MONITOR),
    ("list-mias-tasks", (ACT,), "GET", "/tasks?assignee=mia", None, MONITOR),
    ("list-my-tasks", (START,), "GET", "/tasks", None, ACT),
    ("read-others-task", (ACT,), "GET", "/tasks/{task}", None, MONITOR),
    ("approve-others", but(OPERATE), "POST", "/tasks/{task}/approve", {}, OPERATE),
    ("approve-no-act", (MONITOR,), "POST", "/tasks/{task}/approve", {}, ACT),
    ("reject-others", but(OPERATE), "POST", "/tasks/{task}/reject", {}, OPERATE),
    ("handle-others", but(OPERATE), "POST", "/tasks/{task}/handle", {}, OPERATE),
    ("transfer-others", but(OPERATE), "POST", "/tasks/{task}/transfer", TO_MAX, OPERATE),
    ("comment-others", but(OPERATE), "POST", "/tasks/{task}/comment", HI, OPERATE),
    ("reassign", but(OPERATE), "POST", "/tasks/{task}/reassign", REASSIGN, OPERATE),
    ("list-schedules", (ACT, START), "GET", "/schedules", None, MANAGE),
    ("create-schedule", but(MANAGE), "POST", "/schedules", RULE, MANAGE),
    ("launch-schedule", but(MANAGE), "POST", "/schedules/{schedule}/launch", {}, MANAGE),
]
# fmt: on


async def _request(api: Api, headers: dict, method: str, path: str, body: Any) -> Any:
    if method == "GET":
        return await api.client.get(f"/api/workflows{path}", headers=headers)
    return await api.client.post(f"/api/workflows{path}", headers=headers, json=body)


async def _unchanged(api: Api, world: World) -> None:
    detail = (await api.get(f"/instances/{world.instance}", world.root)).json()
    assert detail["status"] == "running"
    assert [(t["assignee"], t["status"]) for t in detail["tasks"]] == [("mia", "pending")]
    assert len(detail["comments"]) == 0


async def test_missing_permission_is_403(api: Api, world: World, subtests: pytest.Subtests) -> None:
    for n, (case, permissions, method, path, body, named) in enumerate(FORBIDDEN):
        with subtests.test(msg=case):
            caller = await api.token(f"stranger{n}", *permissions)
            response = await _request(api, caller, method, world.path(path), body)
            assert response.status_code == 403, response.text
            assert response.json()["code"] == "forbidden"
            assert response.json()["permission"] == named
            await _unchanged(api, world)


NOT_VISIBLE: list[tuple[str, str, str, Any]] = [
    ("read-instance", "GET", "/instances/{instance}", None),
    ("suspend", "POST", "/instances/{instance}/suspend", {}),
    ("resume", "POST", "/instances/{instance}/resume", {}),
    ("cancel", "POST", "/instances/{instance}/cancel", {}),
    ("withdraw", "POST", "/instances/{instance}/withdraw", {}),
    ("return", "POST", "/instances/{instance}/return", {}),
    ("comment-instance", "POST", "/instances/{instance}/comments", {"body": "x"}),
    ("read-task", "GET", "/tasks/{task}", None),
    ("approve", "POST", "/tasks/{task}/approve", {}),
    ("reject", "POST", "/tasks/{task}/reject", {}),
    ("handle", "POST", "/tasks/{task}/handle", {}),
    ("transfer", "POST", "/tasks/{task}/transfer", {"to": "max"}),
    ("comment-task", "POST", "/tasks/{task}/comment", {"body": "x"}),
    ("reassign", "POST", "/tasks/{task}/reassign", {"to": "max", "reason": "r"}),
    ("launch", "POST", "/schedules/{schedule}/launch", {}),
    ("read-version", "GET", "/definitions/leave/versions/1", None),
    ("list-versions", "GET", "/definitions/leave/versions", None),
    ("start", "POST", "/instances", START_BODY),
    ("create-schedule", "POST", "/schedules", {"definitionKey": "leave", "cron": "0 9 * * *"}),
]


def _same_message(missing: str, found: str, world: World) -> bool:
    for ident in (world.instance, world.task, world.schedule):
        found = found.replace(f" {ident} ", " N ")
    return missing.replace(f" {10**9} ", " N ") == found


async def test_other_tenants_objects_are_404(
    api: Api, world: World, subtests: pytest.Subtests
) -> None:
    acme = await api.admin("acme-root", tenants=["acme"])
    missing = World(world.root, 10**9, 10**9, 10**9)
    for case, method, path, body in NOT_VISIBLE:
        with subtests.test(msg=case):
            response = await _request(api, acme, method, world.path(path), body)
            assert response.status_code == 404, response.text
            if "{" in path:  # the same answer as for an object that exists nowhere
                twin = await _request(api, acme, method, missing.path(path), body)
                assert twin.status_code == 404
                assert twin.json()["code"] == response.json()["code"]
                assert _same_message(twin.json()["message"], response.json()["message"], world)
            await _unchanged(api, world)


async def test_lists_never_cross_tenants(api: Api, world: World) -> None:
    acme = await api.admin("acme-root", tenants=["acme"])
    await api.deploy(acme, approval("acme-only", assignees=["acme-root"]))
    await api.start(acme, "acme-only", form={"days": 1})
    for path, params in [
        ("/instances", {}),
        ("/tasks", {"assignee": "*"}),
        ("/tasks", {"instanceId": world.instance, "assignee": "*"}),
        ("/definitions", {}),
        ("/schedules", {}),
    ]:
        response = await api.get(path, acme, **params)
        assert response.status_code == 200
        items = response.json()["items"]
        assert all(item["tenant"] == "acme" for item in items), (path, items)
    assert len((await api.get("/instances", acme)).json()["items"]) == 1
    # and the admin who sees every tenant sees both
    assert {i["tenant"] for i in (await api.get("/instances", world.root)).json()["items"]} == {
        "default",
        "acme",
    }


async def test_creating_in_an_invisible_tenant_is_refused(api: Api, world: World) -> None:
    caller = await api.token("dev", *ALL_PERMISSIONS)
    response = await api.post("/definitions", caller, {"definition": approval(), "tenant": "acme"})
    assert response.status_code == 403
    assert response.json()["field"] == "tenant"
    response = await api.post("/instances", caller, {**START_BODY, "tenant": "acme"})
    assert response.status_code == 403
