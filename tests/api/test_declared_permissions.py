"""Permissions declared on routes (issue 29 item 1, SPEC A-2, A-4): every
route of the API declares who may call it (:mod:`flowledger.api.route_access`),
and the declaration holds before the body is read.

The test walks every mutating operation (POST, PUT, PATCH, DELETE) of the
OpenAPI document. For each one declared ``allow(...)``, a caller holding no
permission gets 403 ``forbidden`` naming a declared permission — with a
malformed body, a body nested past the cap, a body of the wrong shape and no
body at all — while a caller holding every permission gets the 422 of the
same malformed body (so the body really is invalid) and the refusal of a
route that audits is written to the operation audit. A route declared
``AUTHENTICATED`` answers 401 to a caller without a token whatever the body,
a signed callback 401 to an unsigned one; the only public mutation is the
console's login-code exchange. Both backends.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import APIRouter, FastAPI
from fastapi.routing import APIRoute, iter_route_contexts

from flowledger.api.app import check_declared
from flowledger.api.route_access import (
    Allow,
    Authenticated,
    GuardedRoute,
    Public,
    SignedCallback,
    allow,
    declaration_of,
)
from flowledger.db.engine_schema import operation_audit
from tests.api.conftest import BASE, Api
from tests.hardening.edge import post_raw

MUTATIONS = ("post", "put", "patch", "delete")
MALFORMED = '{"reason": '
TOO_DEEP = "[" * 200 + "]" * 200
WRONG_SHAPE = '[{"bogus": 1}]'
# a value for every kind of path parameter of the API
PATH_VALUES = {"action": "delay-wake"}
# the mutating operations of the OpenAPI document (say the count: issue 29)
EXPECTED_MUTATIONS = 66  # issue 31 item 3: pauses, scope suspend; issue 30: migrations; schedules


def _route_index(app: FastAPI) -> dict[tuple[str, str], APIRoute]:
    index: dict[tuple[str, str], APIRoute] = {}
    for context in iter_route_contexts(app.routes):
        route = context.original_route
        if isinstance(route, APIRoute):
            for method in context.methods or ():
                index[(method.lower(), str(context.path))] = route
    return index


def _mutations(app: FastAPI) -> Iterator[tuple[str, str, APIRoute]]:
    routes = _route_index(app)
    for path, operations in app.openapi()["paths"].items():
        for method in operations:
            if method in MUTATIONS:
                yield method, path, routes[(method, path)]


def _concrete(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda m: PATH_VALUES.get(m.group(1), "1"), path)


async def _send(
    api: Api, method: str, path: str, raw: str | None, headers: dict[str, str]
) -> httpx.Response:
    content = None if raw is None else raw.encode()
    return await api.client.request(
        method.upper(),
        path,
        content=content,
        headers={**headers, "Content-Type": "application/json"},
    )


async def test_every_mutating_route_answers_403_before_422_item1(api: Api, app: FastAPI) -> None:
    nobody = await api.token("nobody")
    root = await api.admin()
    mutations = list(_mutations(app))
    assert len(mutations) == EXPECTED_MUTATIONS, [f"{m} {p}" for m, p, _ in mutations]
    kinds: dict[type, list[str]] = {}
    audited = 0
    for method, path, route in mutations:
        declaration = declaration_of(route)
        kinds.setdefault(type(declaration), []).append(f"{method.upper()} {path}")
        url = _concrete(path)
        if isinstance(declaration, Allow):
            for raw in (MALFORMED, TOO_DEEP, WRONG_SHAPE, None):
                refused = await _send(api, method, url, raw, nobody)
                assert refused.status_code == 403, (method, path, raw, refused.text)
                body = refused.json()
                assert body["code"] == "forbidden", (method, path, body)
                assert body["permission"] in declaration.permissions, (method, path, body)
            if declaration.audit is not None:
                audited += 4
            permitted = await _send(api, method, url, MALFORMED, root)
            assert permitted.status_code == 422, (method, path, permitted.text)
            assert permitted.json()["field"] == "body", (method, path, permitted.text)
        elif isinstance(declaration, (Authenticated, SignedCallback)):
            for raw in (MALFORMED, TOO_DEEP, None):
                refused = await _send(api, method, url, raw, {})
                assert refused.status_code in (401, 503), (method, path, refused.text)
        else:
            assert isinstance(declaration, Public)
    assert kinds.get(Public) == [f"POST {BASE}/console/session"]
    assert sorted(kinds.get(SignedCallback, [])) == [
        f"POST {BASE}/callbacks/external/{{taskId}}",
        f"POST {BASE}/callbacks/trigger/{{jobId}}",
    ]
    assert sorted(kinds.get(Authenticated, [])) == [
        f"POST {BASE}/console/logout",
        f"POST {BASE}/messages/{{messageId}}/read",
    ]
    assert len(kinds[Allow]) == EXPECTED_MUTATIONS - 5
    # every audited refusal left its failed row, naming the refusal
    refusals = [r for r in await api.rows(operation_audit) if r["actor"] == "nobody"]
    assert len(refusals) == audited
    assert {(r["result"], r["detail"]["code"]) for r in refusals} == {("failed", "forbidden")}


async def test_a_hostile_body_is_refused_once_the_permission_holds_item1(api: Api) -> None:
    """The input caps still apply, after the permission: 422 naming the field."""
    root = await api.admin()
    deep = await post_raw(api.client, "/instances", '{"form": ' + TOO_DEEP + "}", root)
    assert (deep.status_code, deep.json()["code"]) == (422, "nesting_too_deep")
    raw = '{"definitionKey": "x", "version": 1e999}'
    huge = await post_raw(api.client, "/instances", raw, root)
    assert (huge.status_code, huge.json()["code"], huge.json()["field"]) == (
        422,
        "non_finite_number",
        "body.version",
    )


async def test_no_token_is_401_before_the_body_item1(api: Api) -> None:
    response = await post_raw(api.client, "/instances", MALFORMED, {})
    assert (response.status_code, response.json()["code"]) == (401, "unauthenticated")


def test_a_route_without_a_declaration_is_refused_at_start_up_item1() -> None:
    guarded = APIRouter(route_class=GuardedRoute)

    async def endpoint() -> None:
        return None

    with pytest.raises(TypeError, match="must declare its access exactly once"):
        guarded.add_api_route("/x", endpoint, methods=["POST"])
    with pytest.raises(TypeError, match="exactly once"):
        guarded.add_api_route(
            "/y", endpoint, methods=["POST"], dependencies=[allow("a"), allow("b")]
        )
    plain = APIRouter()
    plain.add_api_route("/z", endpoint, methods=["POST"])
    app = FastAPI()
    app.include_router(plain)
    with pytest.raises(TypeError, match="is not a GuardedRoute"):
        check_declared(app)


def test_no_code_reads_python_source_at_run_time_item1() -> None:
    """Issue 29's Done-when: nothing under src/ reads Python source."""
    src = Path(__file__).resolve().parents[2] / "src" / "flowledger"
    readers = re.compile(r"inspect\.getsource|inspect\.getsourcelines|getsourcefile")
    found = [
        str(path.relative_to(src))
        for path in sorted(src.rglob("*.py"))
        if readers.search(path.read_text(encoding="utf-8"))
    ]
    assert found == []
