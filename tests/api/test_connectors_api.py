"""Connectors through the API (SPEC X-3, A-2, A-3, A-4): create, read, list,
update and delete, with the credential write-only (``hasSecret``) and
encrypted at rest; validation 422s naming the field with nothing written; a
taken key 409; write needs ``workflow:definition:manage``, read that or
``workflow:instance:monitor``; other tenants' connectors are 404; every write
audited without the secret; the call audit paged newest first."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet
from sqlalchemy import select

from flowledger.api import create_app
from flowledger.clock import ManualClock
from flowledger.db.connector_schema import connectors
from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit
from flowledger.outbound.connector_store import get_connector, record_call
from flowledger.outbound.secrets import SecretBox, SecretUnreadable
from flowledger.runtime import build_runtime
from flowledger.settings import Settings
from tests.api.conftest import Api, People
from tests.outbound.test_connectors_helpers import secret_key
from tests.runtime_support import process_secrets

__all__ = ["secret_key"]  # the fixture, imported for pytest

pytestmark = pytest.mark.usefixtures("secret_key")

SECRET = "tok-Sup3r-s3cret-API"
NEW_SECRET = "tok-n3w-s3cret-API"
BODY: dict[str, Any] = {
    "key": "erp",
    "name": "ERP",
    "baseUrl": "https://erp.example/api/",
    "authKind": "bearer",
    "secret": SECRET,
    "rateLimit": {"requestsPerSecond": 2.5},
    "circuitBreaker": {"failureThreshold": 3, "resetTimeoutS": 10},
    "defaultHeaders": {"Accept": "application/json"},
}


async def _create(api: Api, headers: dict[str, str], **change: Any) -> dict[str, Any]:
    response = await api.post("/connectors", headers, {**BODY, **change})
    assert response.status_code == 201, response.text
    return dict(response.json())


async def _stored_secret(api: Api, connector_id: int) -> str | None:
    async with api.db.read() as conn:
        connector = await get_connector(conn, connector_id)
    assert connector is not None
    return connector.secret_encrypted


async def test_crud_with_a_write_only_secret_X3(api: Api, people: People) -> None:
    texts: list[str] = []
    created = await api.post("/connectors", people.dev, BODY)
    texts.append(created.text)
    assert created.status_code == 201, created.text
    body = created.json()
    assert "secret" not in body and body["hasSecret"] is True
    assert body["baseUrl"] == "https://erp.example/api"  # normalised
    assert body["authKind"] == "bearer" and body["tenant"] == "default"
    assert body["rateLimit"] == {"requestsPerSecond": 2.5, "burst": 3}
    assert body["circuitBreaker"] == {"failureThreshold": 3, "resetTimeoutS": 10.0}
    assert body["defaultHeaders"] == {"Accept": "application/json"}
    assert body["enabled"] is True and body["createdBy"] == "dev"
    cid = body["id"]
    stored = await _stored_secret(api, cid)
    assert stored is not None and SECRET not in stored
    assert process_secrets().decrypt(stored) == SECRET  # encrypted at rest, readable with the key

    one = await api.get(f"/connectors/{cid}", people.mon)
    listed = await api.get("/connectors", people.mon)
    texts += [one.text, listed.text]
    assert one.json() == body
    assert listed.json() == {"items": [body], "next": None}

    patched = await api.client.patch(
        f"/api/workflows/connectors/{cid}",
        headers=people.dev,
        json={"name": "ERP 2", "secret": NEW_SECRET, "rateLimit": None, "enabled": False},
    )
    texts.append(patched.text)
    assert patched.status_code == 200, patched.text
    after = patched.json()
    assert (after["name"], after["rateLimit"], after["enabled"]) == ("ERP 2", None, False)
    assert after["hasSecret"] is True and after["circuitBreaker"] == body["circuitBreaker"]
    assert process_secrets().decrypt(await _stored_secret(api, cid) or "") == NEW_SECRET

    deleted = await api.client.delete(f"/api/workflows/connectors/{cid}", headers=people.dev)
    assert deleted.status_code == 204
    gone = await api.get(f"/connectors/{cid}", people.dev)
    assert gone.status_code == 404 and gone.json()["code"] == "connector_not_found"

    audit = await api.rows(operation_audit)
    assert [(a["action"], a["result"], a["target_id"]) for a in audit] == [
        ("connector.create", "ok", str(cid)),
        ("connector.update", "ok", str(cid)),
        ("connector.delete", "ok", str(cid)),
    ]
    assert audit[1]["detail"]["changed"] == ["enabled", "name", "rateLimit", "secret"]
    for text in [*texts, repr(audit)]:
        assert SECRET not in text and NEW_SECRET not in text


@pytest.mark.parametrize(
    ("change", "code", "field"),
    [
        ({"key": "9-lives"}, "validation_error", "body.key"),
        ({"baseUrl": "ftp://erp.example"}, "connector_invalid", "baseUrl"),
        ({"baseUrl": f"https://svc:{SECRET}@erp.example"}, "connector_invalid", "baseUrl"),
        ({"secret": None}, "connector_invalid", "secret"),
        ({"authKind": "api_key"}, "connector_invalid", "headerName"),
        ({"authKind": "basic"}, "connector_invalid", "username"),
        ({"authKind": "none"}, "connector_invalid", "secret"),
        ({"secret": "two words\n"}, "connector_invalid", "secret"),
        ({"secret": "x" * 4097}, "validation_error", "body.secret"),
        ({"headerName": "Bad Name"}, "validation_error", "body.headerName"),
        (
            {"defaultHeaders": {"Authorization": f"Bearer {SECRET}"}},
            "connector_invalid",
            "defaultHeaders.Authorization",
        ),
        (
            {"rateLimit": {"requestsPerSecond": 0}},
            "validation_error",
            "body.rateLimit.requestsPerSecond",
        ),
        (
            {"circuitBreaker": {"failureThreshold": 0}},
            "validation_error",
            "body.circuitBreaker.failureThreshold",
        ),
        ({"token": SECRET}, "validation_error", "body.token"),
    ],
)
async def test_invalid_connector_is_422_naming_the_field_and_writes_nothing_X3_A4(
    api: Api, people: People, change: dict[str, Any], code: str, field: str
) -> None:
    response = await api.post("/connectors", people.dev, {**BODY, **change})
    assert response.status_code == 422, response.text
    assert (response.json()["code"], response.json()["field"]) == (code, field)
    assert SECRET not in response.text
    assert await api.count(connectors) == 0
    assert SECRET not in repr(await api.rows(operation_audit))


async def test_key_is_unique_per_tenant_X3(api: Api, people: People) -> None:
    await _create(api, people.dev)
    again = await api.post("/connectors", people.dev, BODY)
    assert again.status_code == 409
    assert (again.json()["code"], again.json()["field"]) == ("connector_key_taken", "key")
    other = await _create(api, people.root, tenant="globex")
    assert other["tenant"] == "globex" and other["key"] == "erp"
    audit = await api.rows(operation_audit)
    assert [(a["action"], a["result"]) for a in audit] == [
        ("connector.create", "ok"),
        ("connector.create", "failed"),
        ("connector.create", "ok"),
    ]
    assert audit[1]["detail"]["code"] == "connector_key_taken"


async def test_permissions_A2(api: Api, people: People) -> None:
    refused = await api.post("/connectors", people.mon, BODY)
    assert refused.status_code == 403
    assert refused.json()["permission"] == "workflow:definition:manage"
    cid = (await _create(api, people.dev))["id"]
    assert (await api.get("/connectors", people.ann)).status_code == 403
    assert (await api.get(f"/connectors/{cid}", people.ann)).status_code == 403
    assert (await api.get(f"/connectors/{cid}/calls", people.ann)).status_code == 403
    assert (await api.get(f"/connectors/{cid}", people.dev)).status_code == 200
    patch = await api.client.patch(
        f"/api/workflows/connectors/{cid}", headers=people.mon, json={"name": "x"}
    )
    assert patch.status_code == 403
    delete = await api.client.delete(f"/api/workflows/connectors/{cid}", headers=people.mon)
    assert delete.status_code == 403
    assert (await api.client.get("/api/workflows/connectors")).status_code == 401


async def test_other_tenants_connectors_are_404_A3(api: Api, people: People) -> None:
    theirs = (await _create(api, people.root, tenant="globex"))["id"]
    mine = (await _create(api, people.dev))["id"]
    listed = (await api.get("/connectors", people.dev)).json()
    assert [c["id"] for c in listed["items"]] == [mine]
    for response in (
        await api.get(f"/connectors/{theirs}", people.dev),
        await api.get(f"/connectors/{theirs}/calls", people.dev),
        await api.client.patch(
            f"/api/workflows/connectors/{theirs}", headers=people.dev, json={"name": "x"}
        ),
        await api.client.delete(f"/api/workflows/connectors/{theirs}", headers=people.dev),
    ):
        assert response.status_code == 404, response.text
        assert response.json()["code"] == "connector_not_found"
    elsewhere = await api.post("/connectors", people.dev, {**BODY, "tenant": "globex"})
    assert elsewhere.status_code == 403
    all_of_them = (await api.get("/connectors", people.root)).json()
    assert sorted(c["id"] for c in all_of_them["items"]) == sorted([theirs, mine])


async def _patch(api: Api, people: People, cid: int, body: dict[str, Any]) -> Any:
    return await api.client.patch(f"/api/workflows/connectors/{cid}", headers=people.dev, json=body)


async def test_patch_rules_for_auth_changes_X3(api: Api, people: People) -> None:
    cid = (await _create(api, people.dev))["id"]
    response = await _patch(api, people, cid, {"authKind": "hmac"})
    assert response.status_code == 422
    assert (response.json()["code"], response.json()["field"]) == ("connector_invalid", "secret")
    response = await _patch(api, people, cid, {"authKind": "hmac", "secret": NEW_SECRET})
    assert response.status_code == 200 and response.json()["hasSecret"] is True
    assert process_secrets().decrypt(await _stored_secret(api, cid) or "") == NEW_SECRET
    response = await _patch(
        api, people, cid, {"authKind": "api_key", "headerName": "X-Key", "secret": SECRET}
    )
    assert response.json()["headerName"] == "X-Key"
    response = await _patch(api, people, cid, {"authKind": "none"})
    assert response.status_code == 200, response.text
    assert response.json()["hasSecret"] is False and response.json()["headerName"] is None
    assert await _stored_secret(api, cid) is None
    for body, field in (
        ({"name": None}, "body"),
        ({"key": "other"}, "body.key"),
        ({"baseUrl": "https://erp.example/?q=1"}, "baseUrl"),
        ({"secret": SECRET}, "secret"),
    ):
        response = await _patch(api, people, cid, body)
        assert response.status_code == 422, body
        assert response.json()["field"] == field
        assert SECRET not in response.text
    assert (await api.get(f"/connectors/{cid}", people.dev)).json()["authKind"] == "none"


async def test_call_audit_is_paged_newest_first_X3(api: Api, people: People) -> None:
    cid = (await _create(api, people.dev))["id"]
    async with api.db.begin() as conn:
        connector = await get_connector(conn, cid)
        assert connector is not None
        for n, (status, outcome) in enumerate([(200, "ok"), (503, "outbound_unavailable")] * 2):
            await record_call(
                conn,
                connector,
                job_id=100 + n,
                instance_id=None,
                method="POST",
                path=f"/orders/{n}",
                status=status,
                outcome=outcome,
                duration_ms=12,
                now=api.clock.now(),
            )
    first = (await api.get(f"/connectors/{cid}/calls", people.mon, limit=3)).json()
    assert [c["jobId"] for c in first["items"]] == [103, 102, 101]
    assert first["items"][0] == {
        "id": first["items"][0]["id"],
        "connectorId": cid,
        "connectorKey": "erp",
        "jobId": 103,
        "instanceId": None,
        "method": "POST",
        "path": "/orders/3",
        "status": 503,
        "outcome": "outbound_unavailable",
        "durationMs": 12,
        "createdAt": first["items"][0]["createdAt"],
    }
    rest = (await api.get(f"/connectors/{cid}/calls", people.mon, cursor=first["next"])).json()
    assert [c["jobId"] for c in rest["items"]] == [100] and rest["next"] is None
    assert (await api.get(f"/connectors/{cid}/calls", people.mon, cursor="!!")).status_code == 422
    async with api.db.read() as conn:
        assert (await conn.execute(select(connectors.c.id))).all() != []


async def test_moving_a_connector_needs_its_secret_again_X3(api: Api, people: People) -> None:
    # a stored credential belongs to the origin it was given for: pointing the
    # connector at another host must not carry the secret along
    cid = (await _create(api, people.dev))["id"]
    stored = await _stored_secret(api, cid)
    assert stored is not None
    response = await _patch(api, people, cid, {"baseUrl": "https://attacker.example/api"})
    assert response.status_code == 422
    assert (response.json()["code"], response.json()["field"]) == ("connector_invalid", "secret")
    assert await _stored_secret(api, cid) == stored
    got = (await api.get(f"/connectors/{cid}", people.dev)).json()
    assert got["baseUrl"] == BODY["baseUrl"].rstrip("/")
    # the same origin with another path keeps it; a new origin with the secret given works
    same_origin = BODY["baseUrl"].rstrip("/") + "/v2"
    response = await _patch(api, people, cid, {"baseUrl": same_origin})
    assert response.status_code == 200, response.text
    assert await _stored_secret(api, cid) == stored
    response = await _patch(
        api, people, cid, {"baseUrl": "https://erp2.example/api", "secret": NEW_SECRET}
    )
    assert response.status_code == 200, response.text
    assert process_secrets().decrypt(await _stored_secret(api, cid) or "") == NEW_SECRET


async def test_an_app_encrypts_with_its_runtimes_key_not_the_processs_X3(
    db: Database, clock: ManualClock
) -> None:
    """The secret box is the runtime's (issue 16 item 3): an app built from
    a runtime with its own key encrypts with that key, whatever the process
    settings say."""
    key = Fernet.generate_key().decode()
    runtime = build_runtime(settings=Settings(secret_key=key), db=db, clock=clock)
    transport = httpx.ASGITransport(app=create_app(runtime))
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
        api = Api(client, db, clock)
        created = await _create(api, await api.admin())
    stored = await _stored_secret(api, created["id"])
    assert stored is not None and SecretBox([key]).decrypt(stored) == SECRET
    with pytest.raises(SecretUnreadable):
        process_secrets().decrypt(stored)
    await runtime.aclose()
