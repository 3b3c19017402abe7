"""Permissions and tenant scope of the instance monitoring endpoints (SPEC
A-2, A-3, O-1, O-2, O-3, O-5): each refuses a caller without its permission
with 403 naming it, and answers 404 for an object of a tenant the caller
cannot see (lists and counts simply do not show it)."""

from __future__ import annotations

from typing import Any

import pytest

from flowledger.api.permissions import ALL_PERMISSIONS, ENGINE_OPERATE, INSTANCE_MONITOR
from tests.api.conftest import Api, approval


def but(*missing: str) -> tuple[str, ...]:
    return tuple(p for p in ALL_PERMISSIONS if p not in missing)


FORM = {"changes": {"note": "x"}, "reason": "r"}
# (case, permissions, method, path, body, permission named)
FORBIDDEN: list[tuple[str, tuple[str, ...], str, str, Any, str]] = [
    ("counts", but(INSTANCE_MONITOR), "GET", "/instances/counts", None, INSTANCE_MONITOR),
    ("export", but(INSTANCE_MONITOR), "GET", "/instances/export", None, INSTANCE_MONITOR),
    (
        "export-xlsx",
        but(INSTANCE_MONITOR),
        "GET",
        "/instances/export?format=xlsx",
        None,
        INSTANCE_MONITOR,
    ),
    ("form", but(ENGINE_OPERATE), "PATCH", "/instances/{instance}/form", FORM, ENGINE_OPERATE),
    ("remind", but(ENGINE_OPERATE), "POST", "/tasks/{task}/remind", {}, ENGINE_OPERATE),
    (
        "views-create",
        ("workflow:task:act",),
        "POST",
        "/views",
        {"name": "x", "scope": "health"},
        INSTANCE_MONITOR,
    ),
    ("views-list", ("workflow:definition:manage",), "GET", "/views", None, INSTANCE_MONITOR),
    ("views-read", ("workflow:definition:manage",), "GET", "/views/{view}", None, INSTANCE_MONITOR),
    (
        "views-update",
        ("workflow:definition:manage",),
        "PATCH",
        "/views/{view}",
        {"name": "y"},
        INSTANCE_MONITOR,
    ),
    (
        "views-delete",
        ("workflow:definition:manage",),
        "DELETE",
        "/views/{view}",
        None,
        INSTANCE_MONITOR,
    ),
]
NOT_FOUND: list[tuple[str, str, str, Any]] = [
    ("form", "PATCH", "/instances/{instance}/form", FORM),
    ("remind", "POST", "/tasks/{task}/remind", {}),
    ("reassign", "POST", "/tasks/{task}/reassign", {"to": "max", "reason": "r"}),
    ("views-read", "GET", "/views/{view}", None),
    ("views-update", "PATCH", "/views/{view}", {"name": "y"}),
    ("views-delete", "DELETE", "/views/{view}", None),
]


@pytest.fixture
async def world(api: Api) -> dict[str, Any]:
    root = await api.admin()
    await api.deploy(root, approval())
    ann = await api.token("ann", "workflow:instance:start", "workflow:task:act")
    instance = await api.start(ann)
    view = await api.post("/views", root, {"name": "shared", "scope": "instances", "shared": True})
    assert view.status_code == 201, view.text
    return {
        "instance": instance["id"],
        "task": instance["tasks"][0]["id"],
        "view": view.json()["id"],
    }


async def _call(api: Api, who: dict[str, str], method: str, path: str, body: Any) -> Any:
    kwargs: dict[str, Any] = {"headers": who}
    if body is not None:
        kwargs["json"] = body
    return await api.client.request(method, f"/api/workflows{path}", **kwargs)


@pytest.mark.parametrize(
    ("permissions", "method", "path", "body", "named"),
    [c[1:] for c in FORBIDDEN],
    ids=[c[0] for c in FORBIDDEN],
)
async def test_missing_permission_is_403_A2(
    api: Api,
    world: dict[str, Any],
    permissions: tuple[str, ...],
    method: str,
    path: str,
    body: Any,
    named: str,
) -> None:
    who = await api.token("limited", *permissions, tenants=("*",))
    response = await _call(api, who, method, path.format(**world), body)
    assert response.status_code == 403, response.text
    assert response.json()["code"] == "forbidden"
    assert response.json()["permission"] == named


@pytest.mark.parametrize(
    ("method", "path", "body"), [c[1:] for c in NOT_FOUND], ids=[c[0] for c in NOT_FOUND]
)
async def test_other_tenants_objects_are_404_A3(
    api: Api, world: dict[str, Any], method: str, path: str, body: Any
) -> None:
    stranger = await api.token("stranger", *ALL_PERMISSIONS, tenants=("elsewhere",))
    response = await _call(api, stranger, method, path.format(**world), body)
    assert response.status_code == 404, response.text


async def test_lists_counts_and_export_hide_other_tenants_A3(
    api: Api, world: dict[str, Any]
) -> None:
    stranger = await api.token("stranger", *ALL_PERMISSIONS, tenants=("elsewhere",))
    assert (await api.get("/instances", stranger)).json()["items"] == []
    assert (await api.get("/instances/counts", stranger)).json()["total"] == 0
    export = await api.get("/instances/export", stranger)
    assert export.headers["x-total-count"] == "0"
    assert str(world["instance"]) not in export.text
    assert (await api.get("/views", stranger)).json()["items"] == []
