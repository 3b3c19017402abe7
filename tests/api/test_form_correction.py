"""Fix the data, then retry (SPEC O-3, E-7): ``PATCH /instances/{id}/form``
corrects form fields of a running or suspended instance — validated
against the form schema, recorded in the form write history with the
operator and the reason, traced and audited. A finished instance is 409, a
blank reason or no change 422, an invalid field 422 naming it; nothing is
written when refused. Both backends."""

from __future__ import annotations

from typing import Any

import pytest

from flowledger.db.engine_schema import operation_audit, workflow_form_writes, workflow_trace
from tests.api.conftest import Api, People, approval


@pytest.fixture
async def running(api: Api, people: People) -> dict:
    await api.deploy(people.root, approval())
    return await api.start(people.ann, form={"days": 2, "note": "typo"})


async def _patch(api: Api, who: dict[str, str], instance_id: int, body: Any) -> Any:
    return await api.client.patch(
        f"/api/workflows/instances/{instance_id}/form", headers=who, json=body
    )


async def test_correction_is_validated_recorded_and_audited_O3(
    api: Api, people: People, running: dict
) -> None:
    iid = running["id"]
    response = await _patch(
        api, people.ops, iid, {"changes": {"note": "fixed"}, "reason": "ERP rejected the typo"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["previous"] == {"note": "typo"} and body["form"] == {"days": 2, "note": "fixed"}
    detail = (await api.get(f"/instances/{iid}", people.mon)).json()
    assert detail["form"] == {"days": 2, "note": "fixed"}
    writes = await api.rows(workflow_form_writes)
    last = writes[-1]
    assert (last["written_by"], last["source"], last["changes"], last["reason"]) == (
        "ops",
        "operator_correction",
        {"note": "fixed"},
        "ERP rejected the typo",
    )
    assert body["writeId"] == last["id"]
    trace = [t for t in await api.rows(workflow_trace) if t["event"] == "form_corrected"]
    assert trace[0]["detail"]["previous"] == {"note": "typo"}
    audit = [r for r in await api.rows(operation_audit) if r["action"] == "instance.correct_form"]
    assert [(a["result"], a["reason"], a["target_id"]) for a in audit] == [
        ("ok", "ERP rejected the typo", str(iid))
    ]


async def test_suspended_instances_can_be_corrected_O3(
    api: Api, people: People, running: dict
) -> None:
    iid = running["id"]
    assert (await api.post(f"/instances/{iid}/suspend", people.ops)).status_code == 200
    response = await _patch(api, people.ops, iid, {"changes": {"days": 3}, "reason": "r"})
    assert response.status_code == 200 and response.json()["form"]["days"] == 3


@pytest.mark.parametrize(
    ("body", "status", "field"),
    [
        ({"changes": {"days": "three"}, "reason": "r"}, 422, "form.days"),
        ({"changes": {"bogus": 1}, "reason": "r"}, 422, "form.bogus"),
        ({"changes": {"days": None}, "reason": "r"}, 422, "form.days"),
        ({"changes": {"note": "x"}, "reason": "   "}, 422, "body.reason"),
        ({"changes": {"note": "x"}, "reason": ""}, 422, "body.reason"),
        ({"changes": {"note": "x"}}, 422, "body.reason"),
        ({"changes": {}, "reason": "r"}, 422, "body.changes"),
        ({"changes": {"note": "x"}, "reason": "r", "extra": 1}, 422, "body.extra"),
    ],
    ids=["wrong-type", "unknown", "required-cleared", "blank", "empty", "missing", "none", "extra"],
)
async def test_bad_corrections_write_nothing_O3(
    api: Api, people: People, running: dict, body: dict, status: int, field: str
) -> None:
    before = await api.count(workflow_form_writes)
    response = await _patch(api, people.ops, running["id"], body)
    assert response.status_code == status, response.text
    assert response.json()["field"] == field
    assert await api.count(workflow_form_writes) == before
    detail = (await api.get(f"/instances/{running['id']}", people.mon)).json()
    assert detail["form"] == {"days": 2, "note": "typo"}


async def test_finished_instance_is_409_O3(api: Api, people: People, running: dict) -> None:
    iid = running["id"]
    assert (await api.post(f"/instances/{iid}/cancel", people.ops)).status_code == 200
    response = await _patch(api, people.ops, iid, {"changes": {"note": "late"}, "reason": "r"})
    assert response.status_code == 409 and response.json()["code"] == "instance_state"


async def test_needs_operate_and_is_tenant_scoped_A2_A3(
    api: Api, people: People, running: dict
) -> None:
    iid = running["id"]
    body = {"changes": {"note": "x"}, "reason": "r"}
    refused = await _patch(api, people.mon, iid, body)
    assert refused.status_code == 403
    assert refused.json()["permission"] == "workflow:engine:operate"
    # the permission is checked before the body is read
    assert (await _patch(api, people.mon, iid, {"nonsense": True})).status_code == 403
    olga = await api.token("olga", "workflow:engine:operate", tenants=("other",))
    assert (await _patch(api, olga, iid, body)).status_code == 404
    assert (await _patch(api, people.ops, 999_999, body)).status_code == 404
    audit = [r for r in await api.rows(operation_audit) if r["action"] == "instance.correct_form"]
    assert [a["result"] for a in audit] == ["failed"] * 4
