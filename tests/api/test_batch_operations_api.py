"""Recorded batch operations over HTTP (issue 29 item 4), both backends:
a batch endpoint answers its ``batchId``, ``counts`` and each item's
``result`` beside its older fields; ``GET /engine/batches/{batchId}``
describes that batch (state, counts, per-item results) and
``GET /engine/batches`` lists it; both need ``workflow:engine:operate``;
another tenant's batch is 404; an unknown id 404; a bad cursor 422."""

from __future__ import annotations

from flowledger.api.permissions import ENGINE_OPERATE
from tests.api.conftest import Api, People
from tests.api.test_instance_ops_api import _stuck_world

BATCHES = "/engine/batches"


async def test_batch_recover_is_described_by_id(api: Api, people: People) -> None:
    ids = await _stuck_world(api, people, 4, failing={2})
    body = {
        "definitionKey": "stuck",
        "nodeKey": "desk",
        "stuckMinutes": 30,
        "reason": "desk closed",
        "instanceIds": [*ids, 999_999],
    }
    response = await api.post("/instances/batch-recover", people.ops, body)
    assert response.status_code == 200, response.text
    result = response.json()
    assert result["totals"] == {"selected": 5, "advanced": 3, "skipped": 1, "failed": 1}
    assert result["counts"] == {"total": 5, "done": 3, "skipped": 1, "failed": 1}
    words = {r["instanceId"]: (r["outcome"], r["result"]) for r in result["results"]}
    assert words[ids[0]] == ("advanced", "done")
    assert words[ids[2]] == ("failed", "failed")
    assert words[999_999] == ("skipped", "skipped")

    described = await api.get(f"{BATCHES}/{result['batchId']}", people.ops)
    assert described.status_code == 200, described.text
    doc = described.json()
    assert doc["id"] == result["batchId"] and doc["kind"] == "instance.batch_recover"
    assert doc["state"] == "completed" and doc["dryRun"] is False
    assert doc["actor"] == "ops" and doc["reason"] == "desk closed"
    assert doc["counts"] == result["counts"] and doc["processed"] == 5
    assert doc["request"]["nodeKey"] == "desk"
    assert {r["key"]: r["result"] for r in doc["results"]} == {
        iid: w[1] for iid, w in words.items()
    }
    failed = next(r for r in doc["results"] if r["result"] == "failed")
    assert failed["error"]["code"] == "expression_invalid"

    listed = await api.get(BATCHES, people.ops)
    assert listed.status_code == 200, listed.text
    assert [b["id"] for b in listed.json()["items"]] == [result["batchId"]]
    assert "results" not in listed.json()["items"][0]
    assert (await api.get(BATCHES, people.ops, kind="job.replay")).json()["items"] == []


async def test_permission_tenants_and_bad_input(api: Api, people: People) -> None:
    ids = await _stuck_world(api, people, 1, failing=set())
    body = {"definitionKey": "stuck", "nodeKey": "desk", "stuckMinutes": 30, "reason": "r"}
    batch_id = (await api.post("/instances/batch-recover", people.root, body)).json()["batchId"]
    assert ids
    for who in (people.mon, people.ann):
        assert (await api.get(f"{BATCHES}/{batch_id}", who)).status_code == 403
        assert (await api.get(BATCHES, who)).status_code == 403
    other = await api.token("otto", ENGINE_OPERATE, tenants=("other",))
    # root's batch ran for every tenant: a scoped caller neither sees nor lists it
    assert (await api.get(f"{BATCHES}/{batch_id}", other)).status_code == 404
    assert (await api.get(BATCHES, other)).json()["items"] == []
    missing = await api.get(f"{BATCHES}/nope", people.ops)
    assert missing.status_code == 404 and missing.json()["field"] == "batchId"
    bad = await api.get(BATCHES, people.ops, cursor="zz")
    assert bad.status_code == 422 and bad.json()["field"] == "cursor"


async def test_scope_suspend_and_job_batches_are_described(api: Api, people: People) -> None:
    from tests.api.test_scope_suspend_api import _world

    world = await _world(api, people)
    body = {
        "definitionKey": "twostep",
        "instanceIds": [*world["first"], world["ended"][0], 999_999],
        "reason": "audit",
    }
    run = (await api.post("/instances/scope-suspend", people.ops, body)).json()
    assert run["counts"] == {"total": 5, "done": 3, "skipped": 2, "failed": 0}
    assert {r["outcome"]: r["result"] for r in run["results"]} == {
        "suspended": "done",
        "skipped": "skipped",
    }
    doc = (await api.get(f"{BATCHES}/{run['batchId']}", people.ops)).json()
    assert (doc["kind"], doc["counts"], doc["state"]) == (
        "definition.suspend_all",
        run["counts"],
        "completed",
    )
    assert doc["request"]["definitionKey"] == "twostep" and doc["reason"] == "audit"
    reasons = {r["key"]: r.get("reason") for r in doc["results"]}
    assert reasons[999_999] == "instance not found"

    api.clock.advance(seconds=1)  # newest first is by start time (the ids are random)
    retry = await api.post("/engine/jobs/batch-retry", people.ops, {"ids": [987_654]})
    assert retry.status_code == 200, retry.text
    retried = retry.json()
    assert retried["batchId"] == retried["replayBatchId"]
    assert retried["items"][0]["result"] == "skipped"
    doc = (await api.get(f"{BATCHES}/{retried['batchId']}", people.ops)).json()
    assert doc["kind"] == "job.batch_retry" and doc["counts"]["skipped"] == 1
    assert doc["results"] == [
        {
            "key": 987_654,
            "result": "skipped",
            "reason": "job 987654 not found",
            "code": "not_found",
            "error": None,
        }
    ]
    kinds = [b["kind"] for b in (await api.get(BATCHES, people.ops)).json()["items"]]
    assert kinds == ["job.batch_retry", "definition.suspend_all"]
