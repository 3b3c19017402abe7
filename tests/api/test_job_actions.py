"""Job operations over HTTP (SPEC A-1 … A-4, L-24), both backends:
``POST /engine/jobs/{jobId}/retry|skip``, ``/batch-retry``, ``/batch-skip``,
``/replay-preview``, ``/replay-dead``.

Covers: the response shapes; 409 ``invalid_state`` for a pending job (an
automatic retry is already scheduled) and a paused one (resume the
instance); 403 without ``workflow:engine:operate`` on every mutation and
without ``workflow:instance:monitor`` on the preview; 404 across tenants on
single-job routes, other tenants' jobs not matched by batches and replays;
422 naming the field for bad input; one audit row per mutation, with the
counts, refusals recorded as failed.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from flowledger.db.engine_schema import operation_audit
from flowledger.engine.job_types import PAUSABLE_TYPES
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.models import Outcome
from tests.api.conftest import BASE, Api, People
from tests.integration.ledger_helpers import add_job, claim_one, force_status, settle_single

JOBS = "/engine/jobs"


async def dead(api: Api, tenant: str = "default", **spec: Any) -> int:
    job_id = await add_job(api.db, api.clock.now(), tenant_id=tenant, **spec)
    await force_status(api.db, job_id, "dead", last_error="HTTP 502 from https://erp.example/x/1")
    return job_id


async def audits(api: Api, action: str) -> list[dict[str, Any]]:
    return [r for r in await api.rows(operation_audit) if r["action"] == action]


async def test_retry_and_skip_one_job(api: Api, people: People) -> None:
    job_id = await dead(api, payload={"n": 1})
    before = (await api.post(f"{JOBS}/{job_id}/retry", people.ops)).json()
    assert before["status"] == "pending" and before["generation"] == 2
    assert before["runAt"] == api.clock.now().isoformat().replace("+00:00", "Z")
    await force_status(api.db, job_id, "dead")
    body = {"payload": {"n": 2}, "reason": "fixed the mapping"}
    response = await api.post(f"{JOBS}/{job_id}/retry", people.ops, body)
    assert response.status_code == 200, response.text
    after = response.json()
    assert after["operationKey"] != before["operationKey"] and after["generation"] == 3
    skipped = await api.post(f"{JOBS}/{job_id}/skip", people.ops, {"reason": "not needed"})
    assert skipped.status_code == 200, skipped.text
    assert (skipped.json()["status"], skipped.json()["cancelReason"]) == ("canceled", "not needed")
    again = await api.post(f"{JOBS}/{job_id}/skip", people.ops)
    assert again.status_code == 409 and again.json()["code"] == "invalid_state"
    [ok, changed] = await audits(api, "job.retry")
    assert (ok["actor"], ok["target_type"], ok["target_id"]) == ("ops", "job", str(job_id))
    assert (changed["reason"], changed["tenant_id"]) == ("fixed the mapping", "default")
    assert changed["detail"]["operationKeyChanged"] is True
    assert [r["result"] for r in await audits(api, "job.skip")] == ["ok", "failed"]


async def test_pending_and_paused_jobs_refuse_a_retry(api: Api, people: People) -> None:
    job_id = await add_job(api.db, api.clock.now(), tenant_id="default")
    job = await claim_one(api.db, api.clock.now())
    await settle_single(api.db, job, Outcome.retry("HTTP 503"), api.clock.now())
    response = await api.post(f"{JOBS}/{job_id}/retry", people.ops)
    assert response.status_code == 409
    error = response.json()
    assert (error["code"], error["field"], error["status"]) == (
        "invalid_state",
        "status",
        "pending",
    )
    assert "automatic retry is already scheduled" in error["message"]
    paused = await add_job(
        api.db, api.clock.now(), "delay_wake", tenant_id="default", instance_id=9
    )
    async with api.db.begin() as conn:
        await ledger_driver(api.db).jobs_pause(conn, 9, types=PAUSABLE_TYPES, now=api.clock.now())
    response = await api.post(f"{JOBS}/{paused}/retry", people.ops)
    assert response.status_code == 409
    assert "resume the instance" in response.json()["message"]
    assert [r["result"] for r in await audits(api, "job.retry")] == ["failed", "failed"]


async def test_batch_retry_and_batch_skip(api: Api, people: People) -> None:
    mine = [await dead(api) for _ in range(3)]
    queued = await add_job(api.db, api.clock.now(), tenant_id="default")
    theirs = await dead(api, tenant="acme")
    ids = [*mine, queued, theirs, 987_654]
    response = await api.post(f"{JOBS}/batch-retry", people.ops, {"ids": ids, "rate": 2})
    assert response.status_code == 200, response.text
    body = response.json()
    assert {k: body[k] for k in ("matched", "submitted", "skipped", "rate")} == {
        "matched": 4,
        "submitted": 3,
        "skipped": 3,
        "rate": 2,
    }
    now = api.clock.now()
    window = body["estimatedCompletion"]
    assert (window["from"], window["to"]) == (
        now.isoformat().replace("+00:00", "Z"),
        (now + timedelta(seconds=1.5)).isoformat().replace("+00:00", "Z"),
    )
    outcomes = [(i["id"], i["outcome"], i["code"]) for i in body["items"]]
    assert outcomes == [
        *[(i, "submitted", None) for i in mine],
        (queued, "skipped", "invalid_state"),
        (theirs, "skipped", "not_found"),
        (987_654, "skipped", "not_found"),
    ]
    [row] = await audits(api, "job.batch_retry")
    assert (row["target_type"], row["target_id"]) == ("job_batch", body["replayBatchId"])
    assert row["detail"] == {
        "requested": 6,
        "rate": 2,
        "matched": 4,
        "submitted": 3,
        "skipped": 3,
        "submittedIds": mine,
    }
    response = await api.post(f"{JOBS}/batch-skip", people.ops, {"ids": ids, "reason": "noise"})
    assert response.status_code == 200, response.text
    skip = response.json()
    assert (skip["submitted"], skip["skipped"], len(skip["items"])) == (4, 2, 6)
    # the older fields, plus the recorded batch's (issue 29 item 4)
    assert set(skip) == {"submitted", "skipped", "items", "batchId", "counts"}
    assert skip["counts"] == {"total": 6, "done": 4, "skipped": 2, "failed": 0}
    assert [i["result"] for i in skip["items"]].count("done") == 4
    described = (await api.get(f"/engine/batches/{skip['batchId']}", people.ops)).json()
    assert (described["kind"], described["counts"]) == ("job.batch_skip", skip["counts"])
    [row] = await audits(api, "job.batch_skip")
    assert (row["reason"], row["detail"]["submittedIds"]) == ("noise", [*mine, queued])


async def test_replay_preview_and_replay(api: Api, people: People) -> None:
    api.clock.advance(seconds=-7200)
    old = [await dead(api, type="it_ledger_out") for _ in range(12)]
    api.clock.advance(seconds=7200)
    await dead(api, type="it_ledger_out")  # too young for ageSeconds=3600
    await dead(api, tenant="acme", type="it_ledger_out")
    flt = {"types": ["it_ledger_out"], "ageSeconds": 3600, "limit": 11}
    preview = await api.post(f"{JOBS}/replay-preview", people.mon, flt)
    assert preview.status_code == 200, preview.text
    shown = preview.json()
    assert (shown["matched"], shown["wouldSubmit"]) == (12, 11)
    assert [s["id"] for s in shown["samples"]] == old[:10]
    assert set(shown["samples"][0]) == {"id", "type", "status", "lastError", "createdAt"}
    response = await api.post(f"{JOBS}/replay-dead", people.ops, {**flt, "rate": 5})
    assert response.status_code == 200, response.text
    body = response.json()
    assert set(body) == {
        "matched",
        "submitted",
        "skipped",
        "rate",
        "estimatedCompletion",
        "replayBatchId",
        "batchId",  # the recorded batch (issue 29 item 4): the replay batch id
        "counts",
    }
    assert body["batchId"] == body["replayBatchId"]
    assert body["counts"] == {"total": 11, "done": 11, "skipped": 0, "failed": 0}
    assert (body["matched"], body["submitted"], body["skipped"], body["rate"]) == (12, 11, 0, 5)
    listed = await api.post(f"{JOBS}/replay-preview", people.ops, flt)
    assert listed.json()["matched"] == 1  # the twelfth, oldest-first cap of 11
    [row] = await audits(api, "job.replay")
    assert row["target_id"] == body["replayBatchId"]
    assert (row["detail"]["filter"], row["detail"]["rate"]) == (flt, 5)
    assert (row["detail"]["matched"], row["detail"]["submitted"]) == (12, 11)
    # no body: every dead / failed job the caller sees
    empty = await api.client.post(f"{BASE}{JOBS}/replay-preview", headers=people.mon)
    assert empty.status_code == 200, empty.text
    assert empty.json()["matched"] == 2
    # a failure cluster's filter can be posted as is
    cluster = {"fingerprint": "0123456789abcdef", "statuses": ["dead", "failed"]}
    assert (await api.post(f"{JOBS}/replay-preview", people.mon, cluster)).json()["matched"] == 0


async def test_permissions_tenants_and_bad_input(api: Api, people: People) -> None:
    job_id = await dead(api)
    theirs = await dead(api, tenant="acme")
    mutations = [
        (f"{JOBS}/{job_id}/retry", {}),
        (f"{JOBS}/{job_id}/skip", {}),
        (f"{JOBS}/batch-retry", {"ids": [job_id]}),
        (f"{JOBS}/batch-skip", {"ids": [job_id]}),
        (f"{JOBS}/replay-dead", {}),
    ]
    for path, body in mutations:
        response = await api.post(path, people.mon, body)
        assert response.status_code == 403, path
        assert response.json()["permission"] == "workflow:engine:operate"
    refused = [r for r in await api.rows(operation_audit) if r["result"] == "failed"]
    assert len(refused) == 5 and {r["detail"]["code"] for r in refused} == {"forbidden"}
    preview = await api.post(f"{JOBS}/replay-preview", people.ann, {})
    assert (preview.status_code, preview.json()["permission"]) == (403, "workflow:instance:monitor")
    for action in ("retry", "skip"):
        response = await api.post(f"{JOBS}/{theirs}/{action}", people.ops)
        assert (response.status_code, response.json()["code"]) == (404, "not_found")
    assert (await api.post(f"{JOBS}/{theirs}/retry", people.root)).status_code == 200
    bad = [
        (f"{JOBS}/batch-retry", {"ids": list(range(1, 502))}, "body.ids"),
        (f"{JOBS}/batch-retry", {"ids": []}, "body.ids"),
        (f"{JOBS}/batch-retry", {"ids": [1], "rate": 201}, "body.rate"),
        (f"{JOBS}/batch-retry", {"ids": [1], "rate": 0}, "body.rate"),
        (f"{JOBS}/replay-dead", {"statuses": ["pending"]}, "body.statuses.0"),
        (f"{JOBS}/replay-dead", {"limit": 501}, "body.limit"),
        (
            f"{JOBS}/replay-preview",
            {"ageSeconds": 1, "enqueuedBefore": "2026-01-01T00:00:00Z"},
            "body",
        ),
        (f"{JOBS}/replay-preview", {"typo": 1}, "body.typo"),
        (f"{JOBS}/{job_id}/retry", {"payload": {"a": "\x00"}}, "body.payload"),
        (f"{JOBS}/0/retry", {}, "path.jobId"),
    ]
    for path, body, field in bad:
        response = await api.post(path, people.ops, body)
        assert response.status_code == 422, (path, body, response.text)
        assert response.json()["field"] == field, (path, body, response.json())
    assert (await api.count(operation_audit)) == 8  # 5 refused + ops' two 404s + root's retry
