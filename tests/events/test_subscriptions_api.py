"""The subscription API (SPEC X-5, A-2, A-3, A-4) on both backends: CRUD
round trip with the secret write-only (generated and shown once, stored
encrypted), validation as 422 with a code and a field, permissions
(manage writes; manage or monitor reads), tenant scoping (another tenant's
subscription is 404 everywhere), the operation audit without secrets, soft
delete, and the paged hits of a subscription.
"""

from __future__ import annotations

from typing import Any

import pytest

from flowledger.api.permissions import DEFINITION_MANAGE
from flowledger.db.engine_schema import operation_audit
from flowledger.db.event_schema import workflow_event_subscriptions
from flowledger.events.dispatch import dispatch_pending
from tests.api import conftest as api_fixtures
from tests.api.conftest import BASE, Api, Headers, People
from tests.events import webhook_support as support
from tests.events.webhook_support import add_outbox_row, hits
from tests.ledger_access import ledger_of
from tests.runtime_support import process_secrets

engine = api_fixtures.engine
app = api_fixtures.app
client = api_fixtures.client
api = api_fixtures.api
people = api_fixtures.people
secret_key = support.secret_key

PATH = "/subscriptions"
HOOK = "https://hooks.example.com/flowledger"
NEW = "a-rotated-secret-value"

pytestmark = pytest.mark.usefixtures("secret_key")


def body(**extra: Any) -> dict[str, Any]:
    return {"name": "erp", "eventTypes": ["task.completed"], "targetUrl": HOOK, **extra}


async def create(api: Api, headers: Headers, data: dict[str, Any]) -> Any:
    return await api.client.post(f"{BASE}{PATH}", json=data, headers=headers)


async def patch(api: Api, headers: Headers, sub_id: int, data: dict[str, Any]) -> Any:
    return await api.client.patch(f"{BASE}{PATH}/{sub_id}", json=data, headers=headers)


async def delete(api: Api, headers: Headers, sub_id: int) -> Any:
    return await api.client.delete(f"{BASE}{PATH}/{sub_id}", headers=headers)


async def audit_rows(api: Api) -> list[dict[str, Any]]:
    return [r for r in await api.rows(operation_audit) if r["target_type"] == "subscription"]


async def test_crud_round_trip_with_a_write_only_secret_X5_A2(api: Api, people: People) -> None:
    made = await create(api, people.dev, body(definitionKey="leave"))
    assert made.status_code == 201, made.text
    created = made.json()
    secret = created.pop("secret")
    assert isinstance(secret, str) and len(secret) >= 32
    sub_id = created["id"]
    assert created == {
        "id": sub_id,
        "tenant": "default",
        "name": "erp",
        "eventTypes": ["task.completed"],
        "definitionKey": "leave",
        "targetUrl": HOOK,
        "enabled": True,
        "hasSecret": True,
        "createdBy": "dev",
        "createdAt": created["createdAt"],
        "updatedAt": created["updatedAt"],
    }
    (stored,) = await api.rows(workflow_event_subscriptions)
    assert secret not in repr(stored)
    assert process_secrets().decrypt(stored["secret_encrypted"]) == secret

    shown = (await api.get(f"{PATH}/{sub_id}", people.mon)).json()
    assert shown == created and "secret" not in shown
    listed = (await api.get(PATH, people.mon)).json()
    assert listed == {"items": [created], "next": None}

    given = await create(api, people.dev, body(secret="a-secret-of-my-own-choosing"))
    assert (given.status_code, given.json()["secret"]) == (201, None)

    changed = await patch(
        api,
        people.dev,
        sub_id,
        {"enabled": False, "eventTypes": ["task.*", "*"], "definitionKey": None, "secret": NEW},
    )
    assert changed.status_code == 200, changed.text
    assert {k: changed.json()[k] for k in ("enabled", "eventTypes", "definitionKey")} == {
        "enabled": False,
        "eventTypes": ["task.*", "*"],
        "definitionKey": None,
    }
    stored = next(r for r in await api.rows(workflow_event_subscriptions) if r["id"] == sub_id)
    assert process_secrets().decrypt(stored["secret_encrypted"]) == NEW

    assert (await delete(api, people.dev, sub_id)).status_code == 204
    assert (await api.get(f"{PATH}/{sub_id}", people.dev)).status_code == 404
    assert [i["id"] for i in (await api.get(PATH, people.dev)).json()["items"]] != [sub_id]
    assert (await delete(api, people.dev, sub_id)).json()["code"] == "subscription_not_found"

    audit = await audit_rows(api)
    assert [(a["action"], a["result"], a["actor"]) for a in audit] == [
        ("subscription.create", "ok", "dev"),
        ("subscription.create", "ok", "dev"),
        ("subscription.update", "ok", "dev"),
        ("subscription.delete", "ok", "dev"),
        ("subscription.delete", "failed", "dev"),
    ]
    assert audit[0]["target_id"] == str(sub_id) and audit[0]["tenant_id"] == "default"
    assert audit[2]["detail"]["secretChanged"] is True
    for row in audit:
        assert secret not in repr(row) and NEW not in repr(row)
        assert "a-secret-of-my-own-choosing" not in repr(row)


BAD_INPUT = [
    (body(eventTypes=[]), "validation_error", "body.eventTypes"),
    (body(eventTypes=["Task Completed"]), "subscription_invalid", "eventTypes"),
    (body(eventTypes=["task.*.x"]), "subscription_invalid", "eventTypes"),
    (body(targetUrl="ftp://hooks.example.com/x"), "subscription_invalid", "targetUrl"),
    (body(targetUrl="https://user:pw@hooks.example.com/"), "subscription_invalid", "targetUrl"),
    (body(targetUrl="not a url"), "subscription_invalid", "targetUrl"),
    (body(targetUrl=HOOK + "/" + "é" * 1000), "subscription_invalid", "targetUrl"),  # encoded
    (body(secret="short"), "validation_error", "body.secret"),
    (body(colour="red"), "validation_error", "body.colour"),
    ({"eventTypes": ["*"], "targetUrl": HOOK}, "validation_error", "body.name"),
    (body(tenant="no such tenant!"), "validation_error", "body.tenant"),
]


async def test_bad_input_is_422_with_a_code_and_field_A4(api: Api, people: People) -> None:
    for data, code, field in BAD_INPUT:
        response = await create(api, people.dev, data)
        assert response.status_code == 422, response.text
        assert (response.json()["code"], response.json()["field"]) == (code, field), data
    assert await api.rows(workflow_event_subscriptions) == []


async def test_patch_refuses_nulls_and_bad_values_A4(api: Api, people: People) -> None:
    sub_id = (await create(api, people.dev, body())).json()["id"]
    for data, field in [
        ({"name": None}, "body.name"),
        ({"enabled": None}, "body.enabled"),
        ({"eventTypes": ["BAD"]}, "eventTypes"),
        ({"targetUrl": "javascript:alert(1)"}, "targetUrl"),
    ]:
        response = await patch(api, people.dev, sub_id, data)
        assert response.status_code == 422, response.text
        assert response.json()["field"] == field
    shown = (await api.get(f"{PATH}/{sub_id}", people.dev)).json()
    assert (shown["name"], shown["eventTypes"], shown["targetUrl"]) == (
        "erp",
        ["task.completed"],
        HOOK,
    )


async def test_permissions_A2(api: Api, people: People) -> None:
    refused = await create(api, people.mon, body())
    assert (refused.status_code, refused.json()["permission"]) == (403, DEFINITION_MANAGE)
    sub_id = (await create(api, people.dev, body())).json()["id"]
    for headers in (people.mon, people.dev, people.root):
        assert (await api.get(PATH, headers)).status_code == 200
        assert (await api.get(f"{PATH}/{sub_id}", headers)).status_code == 200
        assert (await api.get(f"{PATH}/{sub_id}/hits", headers)).status_code == 200
    for headers in (people.ann, people.mia):
        assert (await api.get(PATH, headers)).status_code == 403
        assert (await api.get(f"{PATH}/{sub_id}/hits", headers)).status_code == 403
    assert (await patch(api, people.mon, sub_id, {"enabled": False})).status_code == 403
    assert (await delete(api, people.mon, sub_id)).status_code == 403
    assert (await api.client.get(f"{BASE}{PATH}")).status_code == 401
    failed = [a for a in await audit_rows(api) if a["result"] == "failed"]
    assert [(a["action"], a["actor"]) for a in failed] == [
        ("subscription.create", "mon"),
        ("subscription.update", "mon"),
        ("subscription.delete", "mon"),
    ]


async def test_another_tenants_subscription_is_not_found_A3(api: Api, people: People) -> None:
    theirs = await create(api, people.root, body(tenant="acme"))
    assert (theirs.status_code, theirs.json()["tenant"]) == (201, "acme")
    sub_id = theirs.json()["id"]
    ours = (await create(api, people.dev, body())).json()["id"]

    assert [i["id"] for i in (await api.get(PATH, people.dev)).json()["items"]] == [ours]
    for response in (
        await api.get(f"{PATH}/{sub_id}", people.dev),
        await api.get(f"{PATH}/{sub_id}/hits", people.dev),
        await patch(api, people.dev, sub_id, {"enabled": False}),
        await delete(api, people.dev, sub_id),
    ):
        assert (response.status_code, response.json()["code"]) == (404, "subscription_not_found")
    refused = await create(api, people.dev, body(tenant="acme"))
    assert (refused.status_code, refused.json()["field"]) == (403, "tenant")
    assert (await api.get(f"{PATH}/{sub_id}", people.root)).json()["enabled"] is True


async def test_hits_are_listed_newest_first_in_pages_X5_O10(api: Api, people: People) -> None:
    sub_id = (await create(api, people.dev, body(eventTypes=["custom.*"]))).json()["id"]
    other = (await create(api, people.dev, body(eventTypes=["other.event"]))).json()["id"]
    events = [await add_outbox_row(api.db, api.clock.now()) for _ in range(3)]
    async with api.db.begin() as conn:
        await dispatch_pending(conn, now=api.clock.now(), ledger=ledger_of(conn))
    assert len(await hits(api.db)) == 3

    first = (await api.get(f"{PATH}/{sub_id}/hits", people.mon, limit=2)).json()
    assert [h["eventId"] for h in first["items"]] == [events[2], events[1]]
    assert first["items"][0]["status"] == "pending"
    assert first["items"][0]["eventType"] == "custom.event"
    assert first["items"][0]["jobId"] is not None
    rest = (await api.get(f"{PATH}/{sub_id}/hits", people.mon, cursor=first["next"])).json()
    assert ([h["eventId"] for h in rest["items"]], rest["next"]) == ([events[0]], None)
    delivered = (await api.get(f"{PATH}/{sub_id}/hits", people.mon, status="delivered")).json()
    assert delivered["items"] == []
    assert (await api.get(f"{PATH}/{other}/hits", people.mon)).json()["items"] == []
    bad = await api.get(f"{PATH}/{sub_id}/hits", people.mon, cursor="nope")
    assert (bad.status_code, bad.json()["code"]) == (422, "cursor_invalid")

    assert (await delete(api, people.dev, sub_id)).status_code == 204  # soft: hits kept
    assert len(await hits(api.db, sub_id)) == 3
