"""Tasks through the API (SPEC E-3, E-5, E-11, O-5, A-4): list my tasks and
filter, approve (optionally writing the form) / reject / handle, refusals of
the wrong action or a finished task (409), transfer, comment, an operator
acting on someone else's task, and reassign with its 409 when the target
already holds a pending task at the node."""

from __future__ import annotations

import pytest

from tests.api.conftest import Api, People, approval, handling


@pytest.fixture
async def leave(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())


async def _instance(api: Api, iid: int, headers: dict) -> dict:
    return dict((await api.get(f"/instances/{iid}", headers)).json())


async def test_list_my_tasks_and_filters(api: Api, people: People, leave: None) -> None:
    first = await api.start(people.ann)
    second = await api.start(people.ann)
    mine = await api.my_tasks(people.mia)
    assert [t["instanceId"] for t in mine] == [second["id"], first["id"]]
    assert mine[0]["definitionKey"] == "leave" and mine[0]["initiator"] == "ann"
    assert await api.my_tasks(people.ann) == []
    only = await api.my_tasks(people.mia, instanceId=first["id"])
    assert [t["instanceId"] for t in only] == [first["id"]]
    await api.post(f"/tasks/{only[0]['id']}/approve", people.mia)
    assert len(await api.my_tasks(people.mia, status="pending")) == 1
    assert len(await api.my_tasks(people.mia, status="completed")) == 1
    assert len(await api.my_tasks(people.mon, assignee="mia")) == 2
    assert len(await api.my_tasks(people.mon, assignee="*")) == 2
    paged = (await api.get("/tasks", people.mia, limit=1)).json()
    rest = (await api.get("/tasks", people.mia, limit=1, cursor=paged["next"])).json()
    assert [t["id"] for t in paged["items"] + rest["items"]] == [t["id"] for t in mine]
    assert rest["next"] is None


async def test_approve_finishes_instance(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    [task] = await api.my_tasks(people.mia)
    response = await api.post(
        f"/tasks/{task['id']}/approve", people.mia, {"comment": "enjoy", "form": {"note": "ok"}}
    )
    assert response.status_code == 200, response.text
    done = response.json()
    assert (done["status"], done["action"], done["comment"]) == ("completed", "approve", "enjoy")
    assert done["finishedBy"] == "mia" and done["instanceStatus"] == "approved"
    detail = await _instance(api, instance["id"], people.ann)
    assert detail["status"] == "approved" and detail["form"] == {"days": 2, "note": "ok"}
    twice = await api.post(f"/tasks/{task['id']}/approve", people.mia)
    assert twice.status_code == 409 and twice.json()["code"] == "instance_state"


async def test_approve_with_bad_form_changes_nothing(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    task = instance["tasks"][0]["id"]
    response = await api.post(f"/tasks/{task}/approve", people.mia, {"form": {"days": "x"}})
    assert response.status_code == 422 and response.json()["field"] == "form.days"
    detail = await _instance(api, instance["id"], people.ann)
    assert detail["status"] == "running" and detail["form"] == {"days": 2}
    assert detail["tasks"][0]["status"] == "pending"
    bad = await api.post(f"/tasks/{task}/approve", people.mia, {"form": "x"})
    assert bad.status_code == 422 and bad.json()["field"] == "body.form"


async def test_reject_rejects_instance(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    task = instance["tasks"][0]["id"]
    response = await api.post(f"/tasks/{task}/reject", people.mia, {"comment": "no"})
    assert response.status_code == 200, response.text
    assert response.json()["action"] == "reject"
    assert (await _instance(api, instance["id"], people.ann))["status"] == "rejected"
    form = await api.post(f"/tasks/{task}/reject", people.mia, {"form": {}})
    assert form.status_code == 422 and form.json()["field"] == "body.form"


async def test_handle_task_and_wrong_action(api: Api, people: People) -> None:
    await api.deploy(people.root, handling())
    instance = await api.start(people.ann, "errand", form={})
    task = instance["tasks"][0]["id"]
    wrong = await api.post(f"/tasks/{task}/approve", people.hal)
    assert wrong.status_code == 409 and wrong.json()["code"] == "task_state"
    response = await api.post(f"/tasks/{task}/handle", people.hal, {"comment": "done"})
    assert response.status_code == 200 and response.json()["action"] == "handle"
    assert (await _instance(api, instance["id"], people.ann))["status"] == "approved"


async def test_transfer_moves_task(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    task = instance["tasks"][0]["id"]
    response = await api.post(
        f"/tasks/{task}/transfer", people.mia, {"to": "max", "comment": "pto"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["assignee"] == "max"
    assert await api.my_tasks(people.mia) == []
    assert [t["id"] for t in await api.my_tasks(people.max)] == [task]
    # mia no longer holds it
    assert (await api.post(f"/tasks/{task}/approve", people.mia)).status_code == 403
    assert (await api.post(f"/tasks/{task}/approve", people.max)).status_code == 200
    missing_to = await api.post(f"/tasks/{task}/transfer", people.max, {})
    assert missing_to.status_code == 422 and missing_to.json()["field"] == "body.to"


async def test_operator_acts_on_anyones_task(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    task = instance["tasks"][0]["id"]
    response = await api.post(f"/tasks/{task}/approve", people.ops, {"comment": "on behalf"})
    assert response.status_code == 200 and response.json()["finishedBy"] == "ops"


async def test_comment_on_task(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    task = instance["tasks"][0]["id"]
    response = await api.post(f"/tasks/{task}/comment", people.mia, {"body": "looking"})
    assert response.status_code == 201, response.text
    assert response.json()["taskId"] == task and response.json()["author"] == "mia"
    detail = await _instance(api, instance["id"], people.mia)
    assert [c["body"] for c in detail["comments"]] == ["looking"]


async def test_read_task(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    task = instance["tasks"][0]["id"]
    for who in (people.mia, people.ann, people.mon):
        response = await api.get(f"/tasks/{task}", who)
        assert response.status_code == 200 and response.json()["id"] == task
    assert (await api.get("/tasks/424242", people.mon)).status_code == 404


async def test_reassign(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    task = instance["tasks"][0]["id"]
    response = await api.post(
        f"/tasks/{task}/reassign", people.ops, {"to": "max", "reason": "mia is away"}
    )
    assert response.status_code == 200, response.text
    assert response.json()["assignee"] == "max" and response.json()["status"] == "pending"
    assert [t["id"] for t in await api.my_tasks(people.max)] == [task]
    no_reason = await api.post(f"/tasks/{task}/reassign", people.ops, {"to": "mia"})
    assert no_reason.status_code == 422 and no_reason.json()["field"] == "body.reason"


async def test_reassign_conflict_is_409(api: Api, people: People) -> None:
    await api.deploy(people.root, approval("board", assignees=["mia", "max"], mode="all"))
    instance = await api.start(people.ann, "board")
    mia_task, max_task = (t["id"] for t in instance["tasks"])
    response = await api.post(
        f"/tasks/{mia_task}/reassign", people.ops, {"to": "max", "reason": "cover"}
    )
    assert response.status_code == 409, response.text
    body = response.json()
    assert body["code"] == "assignee_conflict" and body["field"] == "to"
    assert body["taskId"] == max_task
    to_self = await api.post(
        f"/tasks/{mia_task}/reassign", people.ops, {"to": "mia", "reason": "x"}
    )
    assert to_self.status_code == 409
    detail = await _instance(api, instance["id"], people.ops)
    assert [t["assignee"] for t in detail["tasks"]] == ["mia", "max"]
    # mode all: both approvals are needed
    await api.post(f"/tasks/{mia_task}/approve", people.mia)
    assert (await _instance(api, instance["id"], people.ops))["status"] == "running"
    await api.post(f"/tasks/{max_task}/approve", people.max)
    assert (await _instance(api, instance["id"], people.ops))["status"] == "approved"


async def test_reassign_finished_task_is_409(api: Api, people: People, leave: None) -> None:
    instance = await api.start(people.ann)
    task = instance["tasks"][0]["id"]
    await api.post(f"/tasks/{task}/approve", people.mia)
    response = await api.post(f"/tasks/{task}/reassign", people.ops, {"to": "max", "reason": "r"})
    assert response.status_code == 409 and response.json()["code"] == "task_state"
