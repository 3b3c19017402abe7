"""Automation rules over the REST API (SPEC X-6, A-2, A-3, A-4):
``/api/workflows/automation-rules`` create, list, read, change, delete.

Covers: the CRUD round trip with audit rows; permissions (write needs
definition:manage, read also monitor); tenant scoping (another tenant's rule
is 404 for read, change and delete, and missing from lists); templates using
anything but ``system.*`` / ``formData.*``, a bad condition or an incomplete
action are 422 naming the field; secret header values are stored encrypted,
never returned, and kept when a rule is written back as read.
"""

# ruff: noqa: F811 (the API fixtures are imported by name and taken as arguments)
from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from cryptography.fernet import Fernet

from flowledger.db.automation_schema import workflow_automation_rules
from flowledger.db.engine_schema import operation_audit
from tests.api.conftest import BASE, Api, Headers, People, api, app, client, engine, people  # noqa: F401 (fixtures)
from tests.runtime_support import process_secrets

PATH = "/automation-rules"
HOOK = {"type": "http", "url": "https://hooks.example/{{system.instanceId}}"}


def rule(**extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "name": "notify finance",
        "eventTypes": ["instance.finished"],
        "actions": [
            {
                "type": "http",
                "url": "https://erp.example/orders/{{system.instanceId}}",
                "httpMethod": "POST",
                "headers": {"X-Event": "{{system.eventType}}"},
                "bodyTemplate": '{"amount": {{formData.amount}}, "at": "{{system.now}}"}',
            },
            {"type": "updateData", "fieldValues": {"note": "seen {{system.eventId}}"}},
            {
                "type": "notify",
                "channel": "inApp",
                "recipients": ["{{formData.owner}}"],
                "bodyTemplate": "done",
            },
        ],
    }
    body.update(extra)
    return body


async def create(api: Api, headers: Headers, body: dict[str, Any]) -> Any:
    return await api.client.post(f"{BASE}{PATH}", json=body, headers=headers)


async def patch(api: Api, headers: Headers, rule_id: int, body: dict[str, Any]) -> Any:
    return await api.client.patch(f"{BASE}{PATH}/{rule_id}", json=body, headers=headers)


async def delete(api: Api, headers: Headers, rule_id: int) -> Any:
    return await api.client.delete(f"{BASE}{PATH}/{rule_id}", headers=headers)


async def test_crud_round_trip_is_audited_X6_A2(api: Api, people: People) -> None:
    created = await create(api, people.dev, rule(definitionKey="purchase"))
    assert created.status_code == 201, created.text
    body = created.json()
    rule_id = body["id"]
    assert body["tenant"] == "default"
    assert body["createdBy"] == "dev"
    assert body["enabled"] is True
    assert body["definitionKey"] == "purchase"
    assert [a["type"] for a in body["actions"]] == ["http", "updateData", "notify"]
    assert body["actions"][0]["idempotent"] is False
    one = await api.get(f"{PATH}/{rule_id}", people.dev)
    assert one.status_code == 200 and one.json() == body
    listed = await api.get(PATH, people.mon)
    assert listed.status_code == 200
    assert [r["id"] for r in listed.json()["items"]] == [rule_id]
    changed = await patch(
        api,
        people.dev,
        rule_id,
        {"enabled": False, "condition": "form.amount > 1000", "definitionKey": None},
    )
    assert changed.status_code == 200, changed.text
    after = changed.json()
    assert (after["enabled"], after["condition"], after["definitionKey"]) == (
        False,
        "form.amount > 1000",
        None,
    )
    assert after["actions"] == body["actions"] and after["name"] == body["name"]
    assert (await api.get(PATH, people.dev, enabled="true")).json()["items"] == []
    assert (await delete(api, people.dev, rule_id)).status_code == 204
    gone = await api.get(f"{PATH}/{rule_id}", people.dev)
    assert (gone.status_code, gone.json()["code"]) == (404, "automation_rule_not_found")
    audit = [(a["action"], a["target_id"], a["result"]) for a in await api.rows(operation_audit)]
    assert audit == [
        ("automation_rule.create", str(rule_id), "ok"),
        ("automation_rule.update", str(rule_id), "ok"),
        ("automation_rule.delete", str(rule_id), "ok"),
    ]


async def test_list_pages_newest_first_X6(api: Api, people: People) -> None:
    ids = [(await create(api, people.dev, rule(name=f"r{i}"))).json()["id"] for i in range(3)]
    first = (await api.get(PATH, people.dev, limit=2)).json()
    assert [r["id"] for r in first["items"]] == ids[::-1][:2]
    second = (await api.get(PATH, people.dev, limit=2, cursor=first["next"])).json()
    assert ([r["id"] for r in second["items"]], second["next"]) == ([ids[0]], None)


async def test_permissions_A2(api: Api, people: People) -> None:
    refused = await create(api, people.mon, rule())
    assert (refused.status_code, refused.json()["permission"]) == (
        403,
        "workflow:definition:manage",
    )
    assert (await api.get(PATH, people.ann)).status_code == 403
    rule_id = (await create(api, people.dev, rule())).json()["id"]
    assert (await api.get(f"{PATH}/{rule_id}", people.mon)).status_code == 200
    assert (await api.get(f"{PATH}/{rule_id}", people.ops)).status_code == 200
    assert (await patch(api, people.mon, rule_id, {"enabled": False})).status_code == 403
    assert (await delete(api, people.ops, rule_id)).status_code == 403
    assert (await api.get(f"{PATH}/{rule_id}", people.dev)).json()["enabled"] is True
    failed = [a for a in await api.rows(operation_audit) if a["result"] == "failed"]
    assert [a["action"] for a in failed] == [
        "automation_rule.create",
        "automation_rule.update",
        "automation_rule.delete",
    ]


async def test_another_tenants_rule_is_not_found_A3(api: Api, people: People) -> None:
    theirs = await create(api, people.root, rule(tenant="acme"))
    assert (theirs.status_code, theirs.json()["tenant"]) == (201, "acme")
    rule_id = theirs.json()["id"]
    for response in (
        await api.get(f"{PATH}/{rule_id}", people.dev),
        await patch(api, people.dev, rule_id, {"enabled": False}),
        await delete(api, people.dev, rule_id),
    ):
        assert (response.status_code, response.json()["code"]) == (
            404,
            "automation_rule_not_found",
        )
    assert (await api.get(PATH, people.dev)).json()["items"] == []
    assert (await create(api, people.dev, rule(tenant="acme"))).status_code == 403
    (row,) = await api.rows(workflow_automation_rules)
    assert (row["tenant_id"], row["enabled"]) == ("acme", True)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"bodyTemplate": '{"a": {{form.amount}}}'}, "actions[0].bodyTemplate"),
        ({"url": "https://x.example/{{instanceId}}"}, "actions[0].url"),
        ({"url": "https://x.example/{{system.secret}}"}, "actions[0].url"),
        ({"url": "ftp://x.example/"}, "actions[0].url"),
        # the scheme, host and port never come from data
        ({"url": "https://{{formData.host}}/x"}, "actions[0].url"),
        ({"url": "https://{{formData.host}}.example/x"}, "actions[0].url"),
        ({"url": "https://x.example:{{formData.port}}/x"}, "actions[0].url"),
        ({"url": "https://x.example{{formData.rest}}"}, "actions[0].url"),
        ({"url": "https://{{system.tenantId}}.example/x"}, "actions[0].url"),
        ({"url": "https://user@x.example/x"}, "actions[0].url"),
        ({"headers": {"X-A": "{{formData}}"}}, "actions[0].headers.X-A"),
        ({"headers": {"Host": "evil"}}, "actions[0].headers.Host"),
        ({"bodyTemplate": "{{ formData.a b }}"}, "actions[0].bodyTemplate"),
        ({"bodyTemplate": "{{formData.a"}, "actions[0].bodyTemplate"),
    ],
)
async def test_bad_http_templates_are_422_with_field_X6(
    api: Api, people: People, change: dict[str, Any], field: str
) -> None:
    action = {**HOOK, **change}
    response = await create(api, people.dev, rule(actions=[action]))
    assert response.status_code == 422, response.text
    assert (response.json()["code"], response.json()["field"]) == ("automation_rule_invalid", field)
    assert await api.count(workflow_automation_rules) == 0


async def test_placeholders_in_the_url_origin_are_refused_on_patch_too_X4_X6(
    api: Api, people: People
) -> None:
    rule_id = (await create(api, people.dev, rule())).json()["id"]
    moved = {**HOOK, "url": "https://{{formData.host}}/orders/{{system.instanceId}}"}
    response = await patch(api, people.dev, rule_id, {"actions": [moved]})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "actions[0].url"
    assert "path, query or fragment" in response.json()["message"]
    kept = (await api.get(f"{PATH}/{rule_id}", people.dev)).json()["actions"][0]["url"]
    assert kept == "https://erp.example/orders/{{system.instanceId}}"
    # placeholders in the path, query and fragment stay allowed
    fine = {**HOOK, "url": "https://x.example/{{formData.a}}?q={{formData.b}}#{{system.eventId}}"}
    assert (await patch(api, people.dev, rule_id, {"actions": [fine]})).status_code == 200


@pytest.mark.parametrize(
    ("action", "field"),
    [
        (
            {"type": "updateData", "fieldValues": {"note": "{{nodeKey}}"}},
            "actions[1].fieldValues.note",
        ),
        (
            {
                "type": "notify",
                "channel": "inApp",
                "recipients": ["a", "{{error}}"],
                "bodyTemplate": "x",
            },
            "actions[1].recipients[1]",
        ),
        (
            {"type": "notify", "channel": "email", "recipients": ["a@example.com"]},
            "actions[1].bodyTemplate",
        ),
        (
            {"type": "notify", "channel": "sms", "recipients": ["+1"], "bodyTemplate": "x"},
            "actions[1].templateId",
        ),
        (
            {
                "type": "notify",
                "channel": "email",
                "recipients": ["a@example.com"],
                "title": "{{form.x}}",
                "bodyTemplate": "x",
            },
            "actions[1].title",
        ),
    ],
)
async def test_bad_action_is_422_with_field_X6(
    api: Api, people: People, action: dict[str, Any], field: str
) -> None:
    response = await create(api, people.dev, rule(actions=[HOOK, action]))
    assert response.status_code == 422, response.text
    assert (response.json()["code"], response.json()["field"]) == ("automation_rule_invalid", field)
    assert await api.count(workflow_automation_rules) == 0


async def test_bad_condition_shape_and_patch_are_422_X6_A4(api: Api, people: People) -> None:
    bad = await create(api, people.dev, rule(condition="form.amount >"))
    assert (bad.status_code, bad.json()["field"]) == (422, "condition")
    unknown = await create(api, people.dev, rule(actions=[{"type": "shell", "cmd": "rm"}]))
    assert (unknown.status_code, unknown.json()["code"]) == (422, "validation_error")
    typo = await create(api, people.dev, rule(eventType=["x"]))
    assert typo.status_code == 422
    empty = await create(api, people.dev, rule(actions=[]))
    assert empty.status_code == 422
    rule_id = (await create(api, people.dev, rule())).json()["id"]
    nulled = await patch(api, people.dev, rule_id, {"name": None})
    assert (nulled.status_code, nulled.json()["field"]) == (422, "name")
    bad_patch = await patch(
        api, people.dev, rule_id, {"actions": [{**HOOK, "bodyTemplate": "{{form.a}}"}]}
    )
    assert (bad_patch.status_code, bad_patch.json()["field"]) == (422, "actions[0].bodyTemplate")
    assert (await api.get(f"{PATH}/{rule_id}", people.dev)).json()["actions"][0]["url"] == (
        "https://erp.example/orders/{{system.instanceId}}"
    )


@pytest.fixture
def secret_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("FLOWLEDGER_SECRET_KEY", Fernet.generate_key().decode())
    yield


async def test_secret_headers_are_encrypted_and_never_shown_X6(
    api: Api, people: People, secret_key: None
) -> None:
    action = {**HOOK, "secretHeaders": {"Authorization": "Bearer s3cret"}}
    created = await create(api, people.dev, rule(actions=[action]))
    assert created.status_code == 201, created.text
    shown = created.json()["actions"][0]["secretHeaders"]
    assert shown == {"Authorization": "********"}
    assert "s3cret" not in created.text
    (row,) = await api.rows(workflow_automation_rules)
    stored = row["actions"][0]["secretHeaders"]["Authorization"]
    assert process_secrets().decrypt(stored) == "Bearer s3cret"
    rule_id = created.json()["id"]
    # written back as read: the secret is kept
    same = await patch(api, people.dev, rule_id, {"actions": created.json()["actions"]})
    assert same.status_code == 200, same.text
    (row,) = await api.rows(workflow_automation_rules)
    assert process_secrets().decrypt(row["actions"][0]["secretHeaders"]["Authorization"]) == (
        "Bearer s3cret"
    )
    # a redacted value with nothing stored behind it is refused
    other = {**HOOK, "secretHeaders": {"X-Api-Key": "********"}}
    refused = await patch(api, people.dev, rule_id, {"actions": [other]})
    assert (refused.status_code, refused.json()["field"]) == (
        422,
        "actions[0].secretHeaders.X-Api-Key",
    )
