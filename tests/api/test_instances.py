"""Instances through the API (SPEC E-2, E-6, E-7, E-11, O-1, O-3, A-4):
start (latest or given version; another initiator only for operators),
form validation errors as 422 naming the field with nothing written, list
with filters and keyset paging, detail with tasks/tokens/comments/trace, and
the lifecycle: withdraw by the initiator, suspend/resume/cancel/return by an
operator, comments."""

from __future__ import annotations

from datetime import timedelta

import pytest

from flowledger.db.engine_schema import (
    workflow_event_outbox,
    workflow_form_writes,
    workflow_instances,
    workflow_tasks,
    workflow_tokens,
    workflow_trace,
)
from tests.api.conftest import Api, People, approval


@pytest.fixture
async def leave(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())


async def test_start_returns_detail(api: Api, people: People, leave: None) -> None:
    body = await api.start(people.ann, form={"days": 3, "note": "beach"})
    assert body["status"] == "running" and body["initiator"] == "ann"
    assert body["definitionKey"] == "leave" and body["definitionVersion"] == 1
    assert body["form"] == {"days": 3, "note": "beach"}
    assert [(t["nodeKey"], t["assignee"], t["status"]) for t in body["tasks"]] == [
        ("manager", "mia", "pending")
    ]
    assert [(t["nodeKey"], t["state"]) for t in body["tokens"]] == [("manager", "active")]
    assert body["trace"] and body["trace"][0]["event"] == "instance_started"
    assert body["comments"] == []


async def test_start_given_version_and_for_another_initiator(
    api: Api, people: People, leave: None
) -> None:
    await api.deploy(people.root, approval(assignees=["max"]))
    older = await api.start(people.root, version=1, initiator="ann")
    assert older["definitionVersion"] == 1 and older["initiator"] == "ann"
    assert older["tasks"][0]["assignee"] == "mia"
    latest = await api.start(people.ann)
    assert latest["definitionVersion"] == 2 and latest["tasks"][0]["assignee"] == "max"


_NOTHING_WRITTEN = (
    workflow_instances,
    workflow_tasks,
    workflow_tokens,
    workflow_trace,
    workflow_event_outbox,
    workflow_form_writes,
)


@pytest.mark.parametrize(
    ("form", "field"),
    [
        ({"days": 1, "bogus": True}, "form.bogus"),
        ({"days": "two"}, "form.days"),
        ({"days": True}, "form.days"),
        ({"note": "no days"}, "form.days"),
    ],
    ids=["unknown-field", "wrong-type", "bool-for-integer", "missing-required"],
)
async def test_form_errors_are_422_and_write_nothing(
    api: Api, people: People, leave: None, form: dict, field: str
) -> None:
    response = await api.post("/instances", people.ann, {"definitionKey": "leave", "form": form})
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "form_invalid"
    assert response.json()["field"] == field
    for table in _NOTHING_WRITTEN:
        assert await api.count(table) == 0, table.name


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"form": {"days": 1}}, "body.definitionKey"),
        ({"definitionKey": "leave", "form": [1, 2]}, "body.form"),
        ({"definitionKey": "leave", "version": 0}, "body.version"),
        ({"definitionKey": "leave", "form": {}, "extra": 1}, "body.extra"),
        ({"definitionKey": "leave", "initiator": ""}, "body.initiator"),
        ({"definitionKey": "leave", "form": {"days": 1, "note": "a\u0000b"}}, "body.form"),
        ({"definitionKey": "k" * 65}, "body.definitionKey"),
    ],
    ids=[
        "missing-key",
        "form-not-object",
        "version-zero",
        "unknown-field",
        "empty-initiator",
        "nul-in-form",
        "overlong-key",
    ],
)
async def test_bad_body_is_422_naming_the_field(
    api: Api, people: People, leave: None, body: dict, field: str
) -> None:
    response = await api.post("/instances", people.ann, body)
    assert response.status_code == 422, response.text
    assert response.json()["code"] == "validation_error"
    assert response.json()["field"] == field
    assert await api.count(workflow_instances) == 0


async def test_body_that_is_not_json_is_422(api: Api, people: People, leave: None) -> None:
    response = await api.client.post(
        "/api/workflows/instances",
        content=b"{not json",
        headers={**people.ann, "Content-Type": "application/json"},
    )
    assert response.status_code == 422
    assert response.json()["code"] == "validation_error"


async def test_unknown_definition_is_404(api: Api, people: People) -> None:
    response = await api.post("/instances", people.ann, {"definitionKey": "ghost"})
    assert response.status_code == 404
    assert response.json()["code"] == "definition_not_found"
    assert response.json()["field"] == "definitionKey"


async def test_list_filters_and_paging(api: Api, people: People, leave: None) -> None:
    await api.deploy(people.root, approval("trip"))
    ids = []
    for n in range(3):
        ids.append((await api.start(people.ann, form={"days": n + 1}))["id"])
        api.clock.advance(seconds=60)
    other = await api.start(people.root, "trip", initiator="max")
    await api.post(f"/instances/{ids[0]}/cancel", people.ops, {"reason": "dup"})

    async def ids_of(headers: dict, **params: object) -> list[int]:
        response = await api.get("/instances", headers, **params)
        assert response.status_code == 200, response.text
        return [i["id"] for i in response.json()["items"]]

    assert await ids_of(people.mon) == [other["id"], ids[2], ids[1], ids[0]]
    assert await ids_of(people.mon, status="canceled") == [ids[0]]
    assert await ids_of(people.mon, definitionKey="trip") == [other["id"]]
    assert await ids_of(people.mon, initiator="ann") == [ids[2], ids[1], ids[0]]
    start = api.clock.now() - timedelta(seconds=180)
    window = {
        "createdFrom": (start + timedelta(seconds=60)).isoformat(),
        "createdTo": (start + timedelta(seconds=120)).isoformat(),
    }
    assert await ids_of(people.mon, **window) == [ids[1]]
    # ann, with task:act only, sees what she started
    assert await ids_of(people.ann) == [ids[2], ids[1], ids[0]]
    # keyset paging
    first = (await api.get("/instances", people.mon, limit=3)).json()
    assert [i["id"] for i in first["items"]] == [other["id"], ids[2], ids[1]]
    second = (await api.get("/instances", people.mon, limit=3, cursor=first["next"])).json()
    assert [i["id"] for i in second["items"]] == [ids[0]] and second["next"] is None


async def test_list_refuses_naive_time_and_bad_status(api: Api, people: People) -> None:
    naive = await api.get("/instances", people.mon, createdFrom="2026-01-01T00:00:00")
    assert naive.status_code == 422 and naive.json()["field"] == "query.createdFrom"
    status = await api.get("/instances", people.mon, status="sleeping")
    assert status.status_code == 422 and status.json()["field"] == "query.status"
    limit = await api.get("/instances", people.mon, limit=500)
    assert limit.status_code == 422 and limit.json()["field"] == "query.limit"
    later, earlier = "2027-01-01T00:00:00Z", "2026-01-01T00:00:00Z"
    for start, end in (("createdFrom", "createdTo"), ("finishedFrom", "finishedTo")):
        reversed_range = await api.get("/instances", people.mon, **{start: later, end: earlier})
        assert reversed_range.status_code == 422, reversed_range.text
        assert reversed_range.json()["field"] == f"query.{start}"


async def test_detail_readable_by_initiator_participant_and_monitor(
    api: Api, people: People, leave: None
) -> None:
    instance = await api.start(people.ann)
    for who in (people.ann, people.mia, people.mon):
        response = await api.get(f"/instances/{instance['id']}", who)
        assert response.status_code == 200
    assert (await api.get(f"/instances/{instance['id']}", people.max)).status_code == 403
    assert (await api.get("/instances/999999", people.mon)).status_code == 404


async def test_withdraw_by_initiator(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    response = await api.post(
        f"/instances/{instance['id']}/withdraw", people.ann, {"reason": "oops"}
    )
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["status"] == "withdrawn" and body["finishedAt"]
    assert [t["status"] for t in body["tasks"]] == ["canceled"]
    again = await api.post(f"/instances/{instance['id']}/withdraw", people.ann)
    assert again.status_code == 409
    assert again.json()["code"] == "instance_state"


async def test_operator_suspend_resume_cancel(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    iid, task = instance["id"], instance["tasks"][0]["id"]
    suspended = await api.post(f"/instances/{iid}/suspend", people.ops, {"reason": "audit"})
    assert suspended.status_code == 200 and suspended.json()["status"] == "suspended"
    blocked = await api.post(f"/tasks/{task}/approve", people.mia)
    assert blocked.status_code == 409 and blocked.json()["code"] == "instance_state"
    assert (await api.post(f"/instances/{iid}/suspend", people.ops)).status_code == 409
    resumed = await api.post(f"/instances/{iid}/resume", people.ops)
    assert resumed.status_code == 200 and resumed.json()["status"] == "running"
    canceled = await api.post(f"/instances/{iid}/cancel", people.ops, {"reason": "dup"})
    assert canceled.status_code == 200 and canceled.json()["status"] == "canceled"
    assert (await api.post(f"/tasks/{task}/approve", people.mia)).status_code == 409


async def test_return_to_initiator_and_resubmit(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    response = await api.post(f"/instances/{instance['id']}/return", people.ops, {"reason": "fix"})
    assert response.status_code == 200, response.text
    tasks = response.json()["tasks"]
    assert [(t["kind"], t["assignee"], t["status"]) for t in tasks] == [
        ("approval", "mia", "canceled"),
        ("resubmit", "ann", "pending"),
    ]
    resubmit = await api.post(f"/tasks/{tasks[1]['id']}/handle", people.ann, {"form": {"days": 1}})
    assert resubmit.status_code == 200, resubmit.text
    [again] = await api.my_tasks(people.mia, status="pending")
    assert again["instanceId"] == instance["id"] and again["nodeKey"] == "manager"


async def test_comments_on_instance(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    response = await api.post(f"/instances/{instance['id']}/comments", people.ann, {"body": "hi"})
    assert response.status_code == 201, response.text
    comment = response.json()
    assert comment["author"] == "ann" and comment["body"] == "hi" and comment["taskId"] is None
    detail = (await api.get(f"/instances/{instance['id']}", people.ann)).json()
    assert [c["id"] for c in detail["comments"]] == [comment["id"]]
    empty = await api.post(f"/instances/{instance['id']}/comments", people.ann, {"body": ""})
    assert empty.status_code == 422 and empty.json()["field"] == "body.body"
    by_ops = await api.post(f"/instances/{instance['id']}/comments", people.ops, {"body": "ok"})
    assert by_ops.status_code == 201


async def test_actions_without_a_body(api: Api, people: People, leave: None) -> None:
    """``reason`` / ``comment`` are optional, and so is the whole body."""
    instance = await api.start(people.ann)
    path = f"/api/workflows/instances/{instance['id']}"
    suspended = await api.client.post(f"{path}/suspend", headers=people.ops)
    assert suspended.status_code == 200 and suspended.json()["status"] == "suspended"
    resumed = await api.client.post(f"{path}/resume", headers=people.ops)
    assert resumed.status_code == 200
    task = instance["tasks"][0]["id"]
    approved = await api.client.post(f"/api/workflows/tasks/{task}/approve", headers=people.mia)
    assert approved.status_code == 200 and approved.json()["instanceStatus"] == "approved"
