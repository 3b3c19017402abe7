"""Authentication (DESIGN "Auth", SPEC A-2): every endpoint refuses a
request without a valid bearer token with 401 ``unauthenticated``; tokens
are stored hashed, can be revoked, and may narrow their user's permissions
and tenants; GET /me shows the caller."""

from __future__ import annotations

import hashlib
import re

import pytest
from sqlalchemy import update

from flowledger.api.auth import create_user, issue_token
from flowledger.api.permissions import INSTANCE_MONITOR, TASK_ACT
from flowledger.db.engine_schema import api_tokens
from tests.api.conftest import Api

PARAMS = {
    "instanceId": "1",
    "taskId": "1",
    "scheduleId": "1",
    "key": "leave",
    "version": "1",
    "jobId": "1",
    "traceId": "t-1",
    "messageId": "1",
    "connectorId": "1",
    "subscriptionId": "1",
    "ruleId": "1",
    "ticketId": "1",
    "logId": "1",
}
# External systems authenticate callbacks by HMAC signature, not by bearer
# token (SPEC; tests/api/test_callbacks.py covers their refusals).
SIGNED_PREFIX = "/api/workflows/callbacks/"
# The console's login exchange takes a one-time code instead of a token
# (tests/api/test_console.py covers its refusals).
CODE_EXCHANGE = "/api/workflows/console/session"


async def _operations(api: Api) -> list[tuple[str, str]]:
    doc = (await api.client.get("/api/openapi.json")).json()
    return [
        (method.upper(), re.sub(r"\{(\w+)\}", lambda m: PARAMS.get(m.group(1), "1"), path))
        for path, item in doc["paths"].items()
        for method in item
        if method in {"get", "post", "patch", "delete"}
        and not path.startswith(SIGNED_PREFIX)
        and path != CODE_EXCHANGE
    ]


@pytest.mark.parametrize(
    "authorization",
    [None, "Bearer not-a-token", "Basic cm9vdDpyb290", "Bearer "],
    ids=["missing", "unknown", "basic", "empty"],
)
async def test_every_endpoint_refuses_without_valid_token(
    api: Api, authorization: str | None
) -> None:
    await api.admin()  # a real user exists; the request just doesn't carry its token
    headers = {} if authorization is None else {"Authorization": authorization}
    operations = await _operations(api)
    assert len(operations) >= 20
    for method, path in operations:
        response = await api.client.request(method, path, headers=headers, json={})
        assert response.status_code == 401, (method, path, response.text)
        assert response.json()["code"] == "unauthenticated"
        assert response.headers["www-authenticate"] == "Bearer"


async def test_token_is_stored_hashed_and_revocable(api: Api) -> None:
    headers = await api.admin()
    token = headers["Authorization"].removeprefix("Bearer ")
    rows = await api.rows(api_tokens)
    assert [r["token_hash"] for r in rows] == [hashlib.sha256(token.encode()).hexdigest()]
    assert (await api.get("/me", headers)).status_code == 200
    async with api.db.begin() as conn:
        await conn.execute(update(api_tokens).values(revoked_at=api.clock.now()))
    response = await api.get("/me", headers)
    assert response.status_code == 401
    assert response.json()["code"] == "unauthenticated"


async def test_me_shows_caller(api: Api) -> None:
    async with api.db.begin() as conn:
        await create_user(
            conn,
            "zoe",
            display_name="Zoe Z",
            roles=["finance"],
            permissions=[TASK_ACT, INSTANCE_MONITOR],
            tenants=["default", "acme"],
            now=api.clock.now(),
        )
        token = await issue_token(conn, "zoe", now=api.clock.now())
    response = await api.get("/me", {"Authorization": f"Bearer {token}"})
    assert response.status_code == 200
    assert response.json() == {
        "id": "zoe",
        "displayName": "Zoe Z",
        "roles": ["finance"],
        "permissions": sorted([TASK_ACT, INSTANCE_MONITOR]),
        "tenants": ["default", "acme"],
    }


async def test_token_narrows_but_never_widens(api: Api) -> None:
    async with api.db.begin() as conn:
        await create_user(
            conn, "zoe", permissions=[TASK_ACT], tenants=["default", "acme"], now=api.clock.now()
        )
        token = await issue_token(
            conn,
            "zoe",
            now=api.clock.now(),
            permissions=[TASK_ACT, INSTANCE_MONITOR],
            tenants=["acme", "other"],
        )
    body = (await api.get("/me", {"Authorization": f"Bearer {token}"})).json()
    assert body["permissions"] == [TASK_ACT]
    assert body["tenants"] == ["acme"]
