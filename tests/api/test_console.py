"""The web console's server side (issue 13 item 2, SPEC A-1, A-2): the
one-time login code exchanged for a session token, logout revoking it, the
live worker nodes of the runtime panel, and the built console served as the
fallback — client routes get index.html, hashed assets are cached for a
year, and nothing shadows ``/api/*`` or ``/metrics``."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import timedelta
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import select

from flowledger.access.login_codes import LoginCodes
from flowledger.api import create_app
from flowledger.api.console import IMMUTABLE, ConsoleFallback
from flowledger.api.console_login import login_url
from flowledger.db.database import Database
from flowledger.db.engine_schema import api_tokens, operation_audit
from flowledger.engine import Engine
from tests.api.conftest import Api, People
from tests.ops.rows import add_node

SESSION = "/api/workflows/console/session"


async def test_a_login_code_is_exchanged_once_for_a_working_token(
    api: Api, people: People, app: FastAPI
) -> None:
    url = login_url("http://127.0.0.1:8717", "root", app.state.api.login_codes)
    assert url.startswith("http://127.0.0.1:8717/login#code=")
    code = url.split("#code=", 1)[1]
    response = await api.client.post(SESSION, json={"code": code})
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["userId"] == "root"
    me = await api.client.get(
        "/api/workflows/me", headers={"Authorization": f"Bearer {body['token']}"}
    )
    assert me.status_code == 200 and me.json()["id"] == "root"
    again = await api.client.post(SESSION, json={"code": code})
    assert again.status_code == 401
    assert again.json() == {
        "code": "login_code_invalid",
        "message": "the login code is unknown, used or expired",
        "field": "code",
    }
    audit = [r for r in await api.rows(operation_audit) if r["action"] == "console.login"]
    assert [(r["actor"], r["result"]) for r in audit] == [("root", "ok")]


async def test_unknown_or_malformed_codes_are_refused(api: Api) -> None:
    assert (await api.client.post(SESSION, json={"code": "nope"})).status_code == 401
    bad = await api.client.post(SESSION, json={})
    assert bad.status_code == 422 and bad.json()["code"] == "validation_error"


def test_codes_expire_and_are_kept_only_as_digests() -> None:
    codes = LoginCodes(ttl=timedelta(minutes=10))
    from datetime import UTC, datetime

    t0 = datetime(2026, 1, 1, tzinfo=UTC)
    code = codes.mint("admin", now=t0)
    assert code not in repr(codes._codes)
    assert codes.redeem(code, now=t0 + timedelta(minutes=10)) is None  # expired at the TTL
    fresh = codes.mint("admin", now=t0)
    assert codes.redeem(fresh, now=t0 + timedelta(minutes=9)) == "admin"
    assert codes.redeem(fresh, now=t0 + timedelta(minutes=9)) is None  # single use


async def test_logout_revokes_the_token_of_the_request(
    api: Api, people: People, app: FastAPI
) -> None:
    code = app.state.api.login_codes.mint("root")
    token = (await api.client.post(SESSION, json={"code": code})).json()["token"]
    headers = {"Authorization": f"Bearer {token}"}
    out = await api.client.post("/api/workflows/console/logout", headers=headers)
    assert out.status_code == 200 and out.json() == {"revoked": True}
    after = await api.client.get("/api/workflows/me", headers=headers)
    assert after.status_code == 401
    # the other tokens of the user still work
    assert (await api.client.get("/api/workflows/me", headers=people.root)).status_code == 200
    async with api.db.read() as conn:
        revoked = (
            await conn.execute(
                select(api_tokens.c.revoked_at).where(api_tokens.c.user_id == "root")
            )
        ).scalars()
        assert sum(r is not None for r in revoked) == 1
    assert (await api.client.post("/api/workflows/console/logout")).status_code == 401


async def test_worker_nodes_list_the_live_workers_L23(api: Api, people: People) -> None:
    now = await api.db.now()
    await add_node(api.db, "w-1", heartbeat_at=now - timedelta(seconds=5), slots_in_use=3)
    await add_node(api.db, "w-stale", heartbeat_at=now - timedelta(minutes=3))
    await add_node(api.db, "w-gone", heartbeat_at=now - timedelta(minutes=11))
    await add_node(api.db, "api-only", heartbeat_at=now, roles=["api"])
    response = await api.get("/engine/workers", people.mon)
    assert response.status_code == 200, response.text
    items = response.json()["items"]
    assert [(n["id"], n["active"], n["slotsInUse"], n["slotsCapacity"]) for n in items] == [
        ("w-1", True, 3, 8),
        ("w-stale", False, 0, 8),
    ]
    assert 4 <= items[0]["heartbeatAgeSeconds"] <= 60
    assert 179 <= items[1]["heartbeatAgeSeconds"] <= 240
    status = (await api.get("/engine/jobs/runtime-status", people.mon)).json()
    assert status["liveWorkers"] == {"active": 1, "total": 2}  # the panel agrees
    denied = await api.get("/engine/workers", people.ann)
    assert denied.status_code == 403


async def test_jobs_filter_by_node_and_definition(api: Api, people: People) -> None:
    from tests.api.conftest import approval
    from tests.ops.rows import add_job

    await api.deploy(people.root, approval("leave"))
    await api.deploy(people.root, approval("trip"))
    leave = await api.start(people.ann, "leave")
    trip = await api.start(people.ann, "trip")
    now = api.clock.now()
    a = await add_job(
        api.db, now, type="trigger_dispatch", node_key="push", instance_id=leave["id"]
    )
    b = await add_job(api.db, now, type="trigger_dispatch", node_key="post", instance_id=trip["id"])
    c = await add_job(api.db, now, type="trigger_dispatch", node_key="push", instance_id=trip["id"])

    async def ids(**params: str) -> list[int]:
        response = await api.get("/engine/jobs", people.root, type="trigger_dispatch", **params)
        assert response.status_code == 200, response.text
        return [j["id"] for j in response.json()["items"]]

    assert await ids(nodeKey="push") == [c, a]
    assert await ids(definitionKey="trip") == [c, b]
    assert await ids(definitionKey="trip", nodeKey="push") == [c]
    assert await ids(definitionKey="nothing") == []
    clusters = await api.get(
        "/engine/jobs/failure-clusters", people.root, by="type", nodeKey="push", status="pending"
    )
    assert clusters.status_code == 200
    # a cluster under a node filter has no replay filter (the body cannot name a node)
    assert all(c["filter"] is None for c in clusters.json()["items"])


# ------------------------------------------------------------ static serving


@pytest.fixture
def dist(tmp_path: Path) -> Path:
    (tmp_path / "assets").mkdir()
    (tmp_path / "index.html").write_text("<!doctype html><div id=root></div>", encoding="utf-8")
    (tmp_path / "assets" / "index-abc123.js").write_text("console.log(1)", encoding="utf-8")
    (tmp_path / "favicon.txt").write_text("hi", encoding="utf-8")
    (tmp_path.parent / "secret.txt").write_text("no", encoding="utf-8")
    return tmp_path


async def _client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


@pytest.fixture
async def served(db: Database, engine: Engine, dist: Path) -> AsyncIterator[httpx.AsyncClient]:
    app = create_app(db, engine=engine)
    installed = app.router.default
    assert isinstance(installed, ConsoleFallback)  # create_app mounted the console
    app.router.default = ConsoleFallback(installed.not_found, dist)  # over a test build
    async for c in _client(app):
        yield c


async def test_client_routes_get_the_index_and_assets_are_immutable(
    served: httpx.AsyncClient,
) -> None:
    for path in ("/", "/monitor/jobs", "/login", "/definitions?key=x"):
        response = await served.get(path)
        assert response.status_code == 200, path
        assert response.text.startswith("<!doctype html>")
        assert response.headers["cache-control"] == "no-cache"
    asset = await served.get("/assets/index-abc123.js")
    assert asset.status_code == 200 and asset.text == "console.log(1)"
    assert asset.headers["cache-control"] == IMMUTABLE == "public, max-age=31536000, immutable"
    other = await served.get("/favicon.txt")
    assert other.status_code == 200 and other.headers["cache-control"] == "no-cache"
    missing_asset = await served.get("/assets/index-old.js")
    assert missing_asset.status_code == 404 and missing_asset.json()["code"] == "not_found"


async def test_api_and_metrics_are_never_shadowed(served: httpx.AsyncClient) -> None:
    for path in ("/api/nope", "/api/workflows/nope", "/api", "/metrics/x"):
        response = await served.get(path)
        assert response.status_code == 404, path
        assert response.json()["code"] == "not_found"
    metrics = await served.get("/metrics")  # Prometheus text, never the console (SPEC O-22)
    assert metrics.status_code == 200
    assert metrics.headers["content-type"].startswith("text/plain")
    assert "flowledger_queue_backlog_items" in metrics.text
    assert (await served.get("/api/workflows/me")).status_code == 401
    assert (await served.get("/api/openapi.json")).status_code == 200
    assert (await served.post("/monitor/jobs")).status_code in (404, 405)


async def test_no_path_escapes_the_build(served: httpx.AsyncClient) -> None:
    for path in ("/../secret.txt", "/%2e%2e/secret.txt", "/assets/../../secret.txt"):
        response = await served.get(path)
        assert "no" != response.text, path
        assert response.status_code in (200, 404)


async def test_without_a_build_the_console_says_so(
    db: Database, engine: Engine, tmp_path: Path
) -> None:
    app = create_app(db, engine=engine)
    app.router.default = ConsoleFallback(app.router.default.not_found, tmp_path / "missing")
    async for c in _client(app):
        response = await c.get("/monitor/jobs")
        assert response.status_code == 404
        assert response.json()["code"] == "console_not_built"
