"""A rate on the batches that act on each instance at once (issue 29 item
4; SPEC O-6, O-18), both backends: batch recovery of instances and suspend
/ resume by definition take ``rate`` (items per second, 1 to 200, the job
batches' name and bounds); a run of N items at rate r takes at least
(N - 1) / r seconds; the dry run answers ``rate`` and the run's
``estimatedCompletion`` (the job batches' window, count / rate long); the
batch's request document keeps the rate; without a rate nothing changes. A
run longer than 60 s at its rate is refused before anything is written
(422 ``rate_too_slow`` naming ``rate``: no batch row, no ``ok`` audit row,
no instance touched); 0, 201 and a string are 422 naming ``body.rate``."""

from __future__ import annotations

import time
from datetime import datetime
from typing import Any

import pytest

from flowledger.db.batch_schema import workflow_batch_operations
from flowledger.db.engine_schema import operation_audit
from tests.api.conftest import Api, People
from tests.api.test_instance_ops_api import _stuck_world

RECOVER = "/instances/batch-recover"
SUSPEND = "/instances/scope-suspend"
PREVIEW = "/instances/scope-preview"
STUCK = {"definitionKey": "stuck", "nodeKey": "desk"}
RECOVER_BODY = {**STUCK, "stuckMinutes": 30, "reason": "desk closed"}
SUSPEND_BODY = {**STUCK, "reason": "audit"}


def _span(doc: dict[str, Any]) -> float:
    window = doc["estimatedCompletion"]
    start, end = (datetime.fromisoformat(window[k]) for k in ("from", "to"))
    return (end - start).total_seconds()


async def _statuses(api: Api, people: People, ids: list[int]) -> list[str]:
    return [(await api.get(f"/instances/{i}", people.root)).json()["status"] for i in ids]


async def _request_of(api: Api, people: People, batch_id: str) -> dict[str, Any]:
    described = await api.get(f"/engine/batches/{batch_id}", people.ops)
    assert described.status_code == 200, described.text
    return dict(described.json()["request"])


@pytest.mark.parametrize(("path", "body"), [(RECOVER, RECOVER_BODY), (SUSPEND, SUSPEND_BODY)])
async def test_the_rate_paces_the_run_and_is_recorded(
    api: Api, people: People, path: str, body: dict[str, Any]
) -> None:
    ids = await _stuck_world(api, people, 3, failing=set())
    started = time.monotonic()
    response = await api.post(path, people.ops, {**body, "rate": 10})
    elapsed = time.monotonic() - started
    assert response.status_code == 200, response.text
    doc = response.json()
    assert doc["counts"] == {"total": 3, "done": 3, "skipped": 0, "failed": 0}
    assert elapsed >= (3 - 1) / 10  # item k starts no earlier than k / rate
    assert doc["rate"] == 10 and _span(doc) == pytest.approx(0.3)
    request = await _request_of(api, people, doc["batchId"])
    assert request["rate"] == 10 and request["definitionKey"] == "stuck"
    if path == SUSPEND:
        assert await _statuses(api, people, ids) == ["suspended"] * 3
        resumed = (await api.post("/instances/scope-resume", people.ops, STUCK)).json()
        # without a rate: at once, as before
        assert (resumed["rate"], resumed["estimatedCompletion"]) == (None, None)
        assert resumed["totals"]["resumed"] == 3
        assert (await _request_of(api, people, resumed["batchId"]))["rate"] is None


async def test_the_dry_run_answers_the_estimate_at_the_rate(api: Api, people: People) -> None:
    await _stuck_world(api, people, 3, failing=set())
    preview = await api.post(PREVIEW, people.mon, {**STUCK, "rate": 4})
    assert preview.status_code == 200, preview.text
    assert (preview.json()["count"], preview.json()["rate"]) == (3, 4)
    assert _span(preview.json()) == pytest.approx(0.75)  # 3 / 4 s, the job batches' window
    plain = (await api.post(PREVIEW, people.mon, STUCK)).json()
    assert (plain["rate"], plain["estimatedCompletion"]) == (None, None)

    dry = await api.post(RECOVER, people.ops, {**RECOVER_BODY, "dryRun": True, "rate": 2})
    assert dry.status_code == 200, dry.text
    assert dry.json()["totals"]["advanced"] == 3 and dry.json()["dryRun"] is True
    assert (dry.json()["rate"], _span(dry.json())) == (2, pytest.approx(1.5))
    assert (await _request_of(api, people, dry.json()["batchId"]))["rate"] == 2


async def test_a_run_too_slow_for_the_request_is_refused_and_writes_nothing(
    api: Api, people: People
) -> None:
    ids = await _stuck_world(api, people, 61, failing=set())
    # the dry run still answers: 61 instances at 1 per second take 61 s
    preview = (await api.post(PREVIEW, people.mon, {**STUCK, "rate": 1})).json()
    assert (preview["count"], _span(preview)) == (61, pytest.approx(61))
    batches_before = len(await api.rows(workflow_batch_operations))
    audit_before = len(await api.rows(operation_audit))

    for path, body in ((RECOVER, RECOVER_BODY), (SUSPEND, SUSPEND_BODY)):
        refused = await api.post(path, people.ops, {**body, "rate": 1})
        assert refused.status_code == 422, refused.text
        error = refused.json()
        assert (error["code"], error["field"]) == ("rate_too_slow", "rate")
        assert (error["count"], error["rate"], error["maxSeconds"], error["minRate"]) == (
            61,
            1,
            60,
            2,
        )
    assert len(await api.rows(workflow_batch_operations)) == batches_before
    new_audit = (await api.rows(operation_audit))[audit_before:]
    # each refusal leaves its failed row (as every refused action), nothing ok
    assert [(r["action"], r["result"], r["detail"]["code"]) for r in new_audit] == [
        ("instance.batch_recover", "failed", "rate_too_slow"),
        ("definition.suspend_all", "failed", "rate_too_slow"),
    ]
    assert set(await _statuses(api, people, ids)) == {"running"}
    at_desk = (await api.get("/instances", people.root, currentNode="desk", limit=100)).json()
    assert len(at_desk["items"]) == 61  # none recovered either


@pytest.mark.parametrize("rate", [0, 201, "fast"])
@pytest.mark.parametrize(
    ("path", "body"),
    [
        (RECOVER, RECOVER_BODY),
        (SUSPEND, SUSPEND_BODY),
        ("/instances/scope-resume", STUCK),
        (PREVIEW, STUCK),
    ],
)
async def test_a_bad_rate_is_422_naming_it(
    api: Api, people: People, path: str, body: dict[str, Any], rate: object
) -> None:
    response = await api.post(path, people.ops, {**body, "rate": rate})
    assert response.status_code == 422, response.text
    assert (response.json()["code"], response.json()["field"]) == ("validation_error", "body.rate")
    assert await api.rows(workflow_batch_operations) == []
