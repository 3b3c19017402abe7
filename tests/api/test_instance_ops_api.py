"""Force jump (SPEC O-4) and batch recovery (O-6) over HTTP, both backends,
and the permissions (A-2) and tenant scope (A-3) of every new endpoint:
preview equals result field by field; the skipped task's comment and the
audit row are exact; blank reason 422; terminal 409; unknown target 422; a
force jump and an approval sent at once serialize (one wins, the other
409); 50 stuck instances of which 3 fail: 47 advanced, 3 failed, nothing
half-written."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from sqlalchemy import select

from flowledger.db.engine_schema import operation_audit, workflow_tasks, workflow_tokens
from tests.api.conftest import Api, People, approval

BASE = "/instances"

RECOVERABLE = {
    "key": "stuck",
    "name": "stuck",
    "form": {
        "fields": [
            {"key": "divisor", "type": "integer"},
            {"key": "days", "type": "integer"},
        ]
    },
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "desk", "type": "handle", "assignees": {"users": ["hal"]}},
        {
            "key": "review",
            "type": "approval",
            # 10 / 0 raises: the 3 instances with divisor 0 fail to enter review
            "assignees": {"expr": "'rita' if 10 / form.divisor > 0 else 'rita'"},
        },
        {"key": "end", "type": "end"},
    ],
    "edges": [
        {"from": "start", "to": "desk"},
        {"from": "desk", "to": "review"},
        {"from": "review", "to": "end"},
    ],
}


async def _tasks(api: Api, iid: int) -> list[dict[str, Any]]:
    async with api.db.read() as conn:
        rows = await conn.execute(
            select(workflow_tasks)
            .where(workflow_tasks.c.instance_id == iid)
            .order_by(workflow_tasks.c.id)
        )
        return [dict(r) for r in rows.mappings()]


async def _audit(api: Api, action: str) -> list[dict[str, Any]]:
    return [r for r in await api.rows(operation_audit) if r["action"] == action]


def _sans_new_ids(body: dict[str, Any]) -> dict[str, Any]:
    out = {k: v for k, v in body.items() if k not in ("preview", "reason")}
    out["createdTasks"] = [{**t, "taskId": None} for t in out["createdTasks"]]
    out["createdTokens"] = [{**t, "tokenId": None} for t in out["createdTokens"]]
    out["createdJobs"] = [{**j, "jobId": None, "taskId": None} for j in out["createdJobs"]]
    return out


async def test_preview_equals_result_comment_and_audit(api: Api, people: People) -> None:
    await api.deploy(people.root, approval("two", ["mia", "max"]))
    iid = (await api.start(people.ann, "two"))["id"]
    before = await _tasks(api, iid)
    preview = await api.get(f"{BASE}/{iid}/force-jump/preview", people.mon, target="end")
    assert preview.status_code == 200, preview.text
    assert preview.json()["preview"] is True
    assert await _tasks(api, iid) == before  # a preview changes nothing
    result = await api.post(
        f"{BASE}/{iid}/force-jump", people.ops, {"target": "end", "reason": "  done on paper "}
    )
    assert result.status_code == 200, result.text
    assert _sans_new_ids(result.json()) == _sans_new_ids(preview.json())
    body = result.json()
    assert body["instanceStatus"] == "approved"
    assert [(t["nodeKey"], t["assignee"], t["status"]) for t in body["terminatedTasks"]] == [
        ("manager", "mia", "pending"),
        ("manager", "max", "pending"),
    ]
    for task in await _tasks(api, iid):
        assert task["status"] == "skipped"
        assert task["comment"] == "[Admin force jump to «end»] done on paper"
        assert task["finished_by"] == "ops"
    (audit,) = await _audit(api, "instance.force_jump")
    assert audit["actor"] == "ops" and audit["target_id"] == str(iid)
    assert audit["reason"] == "  done on paper " and audit["result"] == "ok"
    assert audit["tenant_id"] == "default"
    assert audit["detail"]["target"] == "end" and audit["detail"]["fromNode"] is None
    assert audit["detail"]["terminatedTasks"] == [t["taskId"] for t in body["terminatedTasks"]]
    # now terminal: 409
    again = await api.post(
        f"{BASE}/{iid}/force-jump", people.ops, {"target": "manager", "reason": "x"}
    )
    assert again.status_code == 409 and again.json()["code"] == "instance_state"
    preview = await api.get(f"{BASE}/{iid}/force-jump/preview", people.mon, target="manager")
    assert preview.status_code == 409


PARALLEL = {
    "key": "par",
    "name": "parallel",
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "fork", "type": "parallel"},
        {"key": "left", "type": "approval", "assignees": {"users": ["lea"]}},
        {"key": "left2", "type": "approval", "assignees": {"users": ["lou"]}},
        {"key": "right", "type": "approval", "assignees": {"users": ["rik"]}},
        {"key": "join", "type": "parallel"},
        {"key": "end", "type": "end"},
    ],
    "edges": [
        {"from": "start", "to": "fork"},
        {"from": "fork", "to": "left"},
        {"from": "fork", "to": "right"},
        {"from": "left", "to": "left2"},
        {"from": "left2", "to": "join"},
        {"from": "right", "to": "join"},
        {"from": "join", "to": "end"},
    ],
}


async def test_from_node_in_a_parallel_branch(api: Api, people: People) -> None:
    await api.deploy(people.root, PARALLEL)
    iid = (await api.start(people.root, "par", form={}))["id"]
    preview = await api.get(
        f"{BASE}/{iid}/force-jump/preview", people.mon, target="left2", fromNode="left"
    )
    assert preview.status_code == 200, preview.text
    result = await api.post(
        f"{BASE}/{iid}/force-jump",
        people.ops,
        {"target": "left2", "reason": "skip left", "fromNode": "left"},
    )
    assert result.status_code == 200, result.text
    assert _sans_new_ids(result.json()) == _sans_new_ids(preview.json())
    body = result.json()
    assert body["fromNode"] == "left"
    assert [t["nodeKey"] for t in body["terminatedTasks"]] == ["left"]
    assert [(t["nodeKey"], t["assignee"]) for t in body["createdTasks"]] == [("left2", "lou")]
    statuses = {t["node_key"]: t["status"] for t in await _tasks(api, iid)}
    assert statuses == {"left": "skipped", "right": "pending", "left2": "pending"}
    doc = (await api.get(f"{BASE}/{iid}/diagnostics", people.mon, view="tokens")).json()
    (join,) = doc["tokens"]["joins"]
    awaited = sorted((w["branch"], w["atNodes"]) for w in join["awaited"])
    assert awaited == [("left", ["left2"]), ("right", ["right"])]


@pytest.mark.parametrize("reason", ["", "   ", "\t\n"])
async def test_blank_reason_is_422(api: Api, people: People, reason: str) -> None:
    await api.deploy(people.root, approval())
    iid = (await api.start(people.ann))["id"]
    response = await api.post(
        f"{BASE}/{iid}/force-jump", people.ops, {"target": "end", "reason": reason}
    )
    assert response.status_code == 422
    assert response.json()["code"] == "validation_error"
    assert "reason" in response.text
    missing = await api.post(f"{BASE}/{iid}/force-jump", people.ops, {"target": "end"})
    assert missing.status_code == 422
    assert [t["status"] for t in await _tasks(api, iid)] == ["pending"]


async def test_unknown_target_and_from_node(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())
    iid = (await api.start(people.ann))["id"]
    response = await api.post(
        f"{BASE}/{iid}/force-jump", people.ops, {"target": "nope", "reason": "r"}
    )
    assert response.status_code == 422
    assert response.json()["field"] == "target" and response.json()["code"] == "node_unknown"
    preview = await api.get(f"{BASE}/{iid}/force-jump/preview", people.mon, target="nope")
    assert preview.status_code == 422 and preview.json()["field"] == "target"
    no_token = await api.post(
        f"{BASE}/{iid}/force-jump", people.ops, {"target": "end", "reason": "r", "fromNode": "end"}
    )
    assert no_token.status_code == 409 and no_token.json()["field"] == "fromNode"
    (failed,) = [
        a for a in await _audit(api, "instance.force_jump") if a["detail"]["target"] == "nope"
    ]
    assert failed["result"] == "failed" and failed["detail"]["code"] == "node_unknown"


async def test_concurrent_jump_and_approval_serialize(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())
    iid = (await api.start(people.ann))["id"]
    (task,) = await _tasks(api, iid)
    jump, approve = await asyncio.gather(
        api.post(f"{BASE}/{iid}/force-jump", people.ops, {"target": "manager", "reason": "redo"}),
        api.post(f"/tasks/{task['id']}/approve", people.mia),
    )
    codes = sorted([jump.status_code, approve.status_code])
    assert codes == [200, 409], (jump.text, approve.text)
    loser = jump if jump.status_code == 409 else approve
    assert loser.json()["code"] in ("instance_state", "task_state")
    async with api.db.read() as conn:
        live = (
            (
                await conn.execute(
                    select(workflow_tokens.c.node_key).where(
                        workflow_tokens.c.instance_id == iid, workflow_tokens.c.state == "active"
                    )
                )
            )
            .scalars()
            .all()
        )
    if jump.status_code == 200:
        assert live == ["manager"]  # a fresh position at manager, the old task skipped
    else:
        assert live == []  # approved and finished; the jump found it terminal


async def _stuck_world(api: Api, people: People, count: int, failing: set[int]) -> list[int]:
    await api.deploy(people.root, RECOVERABLE)
    ids = []
    for n in range(count):
        body = await api.start(people.root, "stuck", form={"divisor": 0 if n in failing else 2})
        ids.append(int(body["id"]))
    api.clock.advance(seconds=3600)
    return ids


async def test_batch_recovery_50_with_3_failing(api: Api, people: People) -> None:
    ids = await _stuck_world(api, people, 50, failing={5, 17, 42})
    bad = {ids[5], ids[17], ids[42]}
    body = {
        "definitionKey": "stuck",
        "nodeKey": "desk",
        "stuckMinutes": 30,
        "reason": "desk closed",
    }
    dry = await api.post(f"{BASE}/batch-recover", people.ops, {**body, "dryRun": True})
    assert dry.status_code == 200, dry.text
    assert dry.json()["totals"] == {"selected": 50, "advanced": 47, "skipped": 0, "failed": 3}
    for iid in ids:
        assert [t["status"] for t in await _tasks(api, iid)] == ["pending"]
    response = await api.post(f"{BASE}/batch-recover", people.ops, body)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["totals"] == {"selected": 50, "advanced": 47, "skipped": 0, "failed": 3}
    failed = {r["instanceId"]: r for r in result["results"] if r["outcome"] == "failed"}
    assert set(failed) == bad
    for item in failed.values():
        assert item["error"]["code"] == "expression_invalid"
        assert "division" in item["error"]["message"].lower()
    for iid in ids:
        rows = await _tasks(api, iid)
        if iid in bad:  # nothing half-written: the desk task is still pending
            assert [(t["node_key"], t["status"]) for t in rows] == [("desk", "pending")]
        else:
            assert [(t["node_key"], t["status"]) for t in rows] == [
                ("desk", "skipped"),
                ("review", "pending"),
            ]
            assert rows[0]["comment"] == "[Admin batch recovery] desk closed"
    recovered = await _audit(api, "instance.recover")
    assert sorted(int(a["target_id"]) for a in recovered) == sorted(set(ids) - bad)
    (batch,) = [a for a in await _audit(api, "instance.batch_recover") if not a["detail"]["dryRun"]]
    assert batch["reason"] == "desk closed" and batch["detail"]["totals"]["failed"] == 3
    # run again: the advanced ones are no longer at desk; the 3 fail again
    again = (await api.post(f"{BASE}/batch-recover", people.ops, body)).json()
    assert again["totals"]["selected"] == 3 and again["totals"]["failed"] == 3


async def test_batch_recovery_explicit_ids_and_stuck_window(api: Api, people: People) -> None:
    ids = await _stuck_world(api, people, 3, failing=set())
    fresh = int((await api.start(people.root, "stuck", form={"divisor": 1}))["id"])
    body = {
        "definitionKey": "stuck",
        "nodeKey": "desk",
        "stuckMinutes": 30,
        "reason": "r",
        "instanceIds": [ids[0], fresh, 999_999],
    }
    result = (await api.post(f"{BASE}/batch-recover", people.ops, body)).json()
    outcomes = {r["instanceId"]: r["outcome"] for r in result["results"]}
    assert outcomes == {ids[0]: "advanced", fresh: "skipped", 999_999: "skipped"}
    blank = await api.post(f"{BASE}/batch-recover", people.ops, {**body, "reason": " "})
    assert blank.status_code == 422


ENDPOINTS = [
    ("get", "/instances/{iid}/diagnostics", None, "mon"),
    ("get", "/instances/{iid}/diagnostic-bundle", None, "mon"),
    ("get", "/instances/{iid}/force-jump/preview?target=end", None, "mon"),
    ("post", "/instances/{iid}/force-jump", {"target": "end", "reason": "r"}, "ops"),
    (
        "post",
        "/instances/batch-recover",
        {"definitionKey": "leave", "nodeKey": "manager", "stuckMinutes": 0, "reason": "r"},
        "ops",
    ),
]


@pytest.mark.parametrize(("method", "path", "body", "allowed"), ENDPOINTS)
async def test_permissions_and_tenants(
    api: Api, people: People, method: str, path: str, body: Any, allowed: str
) -> None:
    await api.deploy(people.root, approval())
    iid = (await api.start(people.ann))["id"]
    url = "/api/workflows" + path.format(iid=iid)
    # mia acts on tasks only; mon monitors but cannot operate
    refused = [people.mia] if allowed == "mon" else [people.mia, people.mon]
    for headers in refused:
        response = await api.client.request(method, url, headers=headers, json=body)
        assert response.status_code == 403, response.text
        assert response.json()["code"] == "forbidden"
    if allowed == "ops" and body is not None:
        # refused before the body is looked at
        response = await api.client.request(method, url, headers=people.mon, json={"x": 1})
        assert response.status_code == 403
    other = await api.token(
        "olga", "workflow:instance:monitor", "workflow:engine:operate", tenants=("other",)
    )
    response = await api.client.request(method, url, headers=other, json=body)
    if "batch-recover" in path:  # another tenant's instances are simply not selected
        assert response.status_code == 200 and response.json()["totals"]["selected"] == 0
        explicit = await api.client.request(
            method, url, headers=other, json={**body, "instanceIds": [iid]}
        )
        assert explicit.json()["results"] == [
            {**explicit.json()["results"][0], "instanceId": iid, "outcome": "skipped"}
        ]
        assert explicit.json()["results"][0]["reason"] == "instance not found"
    else:
        assert response.status_code == 404, response.text
    ok = await api.client.request(method, url, headers=getattr(people, allowed), json=body)
    assert ok.status_code == 200, ok.text
