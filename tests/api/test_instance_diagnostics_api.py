"""The diagnostics document over HTTP (SPEC O-3, O-10, O-12), both
backends: every view in one document and each alone, run states of nodes,
open joins with arrived / awaited branches, taken edges, cc tasks, form
history, triggers with secrets redacted, events with their hits, a trace of
50,000 rows paged, and the ``conclusions`` / ``verdict`` shape. Plus the
diagnostic bundle (O-7) and the chain bundle's per-instance part (L-25)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import insert

from flowledger.db.engine_schema import workflow_trace
from flowledger.db.schema import workflow_job_executions, workflow_jobs
from flowledger.engine.job_types import TRIGGER_DISPATCH
from flowledger.ledger.models import JobSpec
from tests.api.conftest import Api, People
from tests.ledger_access import ledger_of

BASE = "/instances"
VIEWS = ["trace", "nodes", "tasks", "triggers", "events", "tokens", "diagram", "form", "definition"]

PARALLEL = {
    "key": "par",
    "name": "parallel",
    "form": {"fields": [{"key": "days", "type": "integer"}, {"key": "note", "type": "string"}]},
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "copy", "type": "cc", "assignees": {"users": ["carl"]}},
        {"key": "fork", "type": "parallel"},
        {"key": "left", "type": "approval", "assignees": {"users": ["lea"]}},
        {"key": "left2", "type": "approval", "assignees": {"users": ["lou"]}},
        {"key": "right", "type": "approval", "assignees": {"users": ["rik"]}},
        {"key": "join", "type": "parallel"},
        {"key": "after", "type": "approval", "assignees": {"users": ["ada"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [
        {"from": "start", "to": "copy"},
        {"from": "copy", "to": "fork"},
        {"from": "fork", "to": "left"},
        {"from": "fork", "to": "right"},
        {"from": "left", "to": "left2"},
        {"from": "left2", "to": "join"},
        {"from": "right", "to": "join"},
        {"from": "join", "to": "after"},
        {"from": "after", "to": "end"},
    ],
}
GATE = {
    "key": "gate",
    "name": "gate",
    "form": {"fields": [{"key": "amount", "type": "integer"}]},
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "pick", "type": "exclusive"},
        {"key": "big", "type": "approval", "assignees": {"users": ["bob"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [
        {"from": "start", "to": "pick"},
        {"from": "pick", "to": "big", "condition": "form.amount > 10"},
        {"from": "big", "to": "end"},
    ],
}


async def _diag(api: Api, headers: dict[str, str], iid: int, **params: Any) -> dict[str, Any]:
    response = await api.get(f"{BASE}/{iid}/diagnostics", headers, **params)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def _parallel_after_right(api: Api, people: People) -> int:
    await api.deploy(people.root, PARALLEL)
    iid = int((await api.start(people.root, "par", form={"days": 1})).get("id"))
    right = [t for t in await api.my_tasks(people.root, instanceId=iid) if t["nodeKey"] == "right"]
    if not right:  # the task list may not filter by instance: find it in the diagnostics
        doc = await _diag(api, people.root, iid, view="tasks")
        right = [t for t in doc["tasks"] if t["nodeKey"] == "right"]
    response = await api.post(f"/tasks/{right[0]['id']}/approve", people.root)
    assert response.status_code == 200, response.text
    await api.post(f"/instances/{iid}/comments", people.root, {"body": "hello"})
    return iid


async def test_document_has_every_view_and_findings(api: Api, people: People) -> None:
    iid = await _parallel_after_right(api, people)
    doc = await _diag(api, people.mon, iid)
    assert set(VIEWS) <= set(doc)
    assert doc["instance"]["id"] == iid and doc["instance"]["status"] == "running"
    assert isinstance(doc["conclusions"], list)
    for conclusion in doc["conclusions"]:
        assert set(conclusion) == {
            "rule",
            "level",
            "message",
            "messageParams",
            "evidence",
            "repair",
            "healthRule",
        }
        assert set(conclusion["evidence"]) == {"taskIds", "tokenIds", "jobIds"}
    assert set(doc["verdict"]) == {"code", "message", "messageParams", "action", "params"}
    assert isinstance(doc["verdict"]["message"], str) and isinstance(doc["verdict"]["params"], dict)
    for view in VIEWS:
        alone = await _diag(api, people.mon, iid, view=view)
        assert alone["view"] == view and view in alone
        assert not set(VIEWS) - {view} & set(alone)
        if view not in ("trace",):
            assert alone[view] == doc[view], view
    bad = await api.get(f"{BASE}/{iid}/diagnostics", people.mon, view="everything")
    assert bad.status_code == 422
    for minutes in (9, 1441):  # the inspection's thresholds only
        bad = await api.get(f"{BASE}/{iid}/diagnostics", people.mon, thresholdMinutes=minutes)
        assert bad.status_code == 422, bad.text
        assert "thresholdMinutes" in bad.text


async def test_conclusions_and_verdict_carry_the_params_of_their_message_O12(
    api: Api, people: People
) -> None:
    """``messageParams`` (and the verdict's ``code``): the values the English
    message is made of, from which the console words it in zh-CN / en; the
    verdict's repair suffix is made of its ``action`` and ``params``."""
    await api.deploy(people.root, GATE)
    iid = int((await api.start(people.root, "gate", form={"amount": 1}))["id"])
    doc = await _diag(api, people.mon, iid)
    found = {c["rule"]: c for c in doc["conclusions"]}
    assert set(found) == {"running_without_active_task", "token_without_task", "instance_stalled"}
    # the health inspection reports the same stalled instance, with the same repair
    assert [c["healthRule"] for c in doc["conclusions"]] == [None, "instance_stalled", None]
    health = await api.get("/engine/health-inspection", people.mon, thresholdMinutes=10)
    (item,) = [i for i in health.json()["items"] if i["instanceId"] == iid]
    assert (item["rule"], item["level"]) == ("instance_stalled", "critical")
    assert item["repair"] == found["instance_stalled"]["repair"]
    (token,) = found["token_without_task"]["evidence"]["tokenIds"]
    assert found["token_without_task"]["messageParams"] == {"tokenId": token, "nodeKey": "pick"}
    assert found["token_without_task"]["message"] == (
        f"token {token} at «pick» is active but no open task holds it"
    )
    assert found["running_without_active_task"]["messageParams"] == {}
    verdict = doc["verdict"]
    assert (verdict["code"], verdict["messageParams"]) == ("running_without_active_task", {})
    assert (verdict["action"], verdict["params"]) == (
        "force_jump",
        {"target": None, "candidates": ["big"]},
    )
    assert verdict["message"] == (
        "The instance is running but has no pending or waiting task; the gateway matched "
        "no branch: correct the form, or force jump to one of «big»."
    )
    # a healthy instance: what it waits for, and since when
    waiting = int((await api.start(people.root, "gate", form={"amount": 50}))["id"])
    api.clock.advance(seconds=20 * 60 + 30)
    # at the drawer's default threshold (10 min) the inspection reports the task
    verdict = (await _diag(api, people.mon, waiting))["verdict"]
    assert (verdict["code"], verdict["action"]) == ("waiting_task_stuck", "remind")
    # at the inspection's default (30 min) nothing fires yet
    verdict = (await _diag(api, people.mon, waiting, thresholdMinutes=30))["verdict"]
    assert (verdict["code"], verdict["action"]) == ("waiting_for_people", None)
    assert verdict["messageParams"] == {"assignees": ["bob"], "ageMinutes": 20}
    assert verdict["message"] == "nothing is wrong: waiting for bob since 20 min"
    # no relay runs here: its events become a backlog (30 min), the verdict's top
    api.clock.advance(seconds=2 * 3600)
    doc = await _diag(api, people.mon, waiting, thresholdMinutes=30)
    stuck, pending = doc["conclusions"]
    count = pending["messageParams"]["count"]
    assert pending["rule"] == "event_dispatch_pending" and count >= 1
    assert pending["healthRule"] == "workflow_event_outbox_pending"
    assert pending["messageParams"] == {"count": count, "ageMinutes": 140}
    assert (
        pending["message"]
        == f"{count} event(s) of the instance are still pending (oldest since 2 h)"
    )
    assert pending["repair"] == {
        "action": "recovery",
        "params": {"action": "event-dispatch", "jobId": None},
    }
    # both warnings: the verdict names the task first, with its repair
    assert (stuck["rule"], stuck["healthRule"]) == ("waiting_task_stuck", "waiting_task_stuck")
    verdict = doc["verdict"]
    assert (verdict["code"], verdict["messageParams"]) == (
        "waiting_task_stuck",
        stuck["messageParams"],
    )
    assert verdict["params"] == {"taskId": stuck["evidence"]["taskIds"][0], "assignee": "bob"}
    assert verdict["message"] == (
        f"Task {stuck['evidence']['taskIds'][0]} at «big» has waited 2 h for bob; remind bob."
    )


async def test_nodes_tokens_diagram_tasks_form(api: Api, people: People) -> None:
    iid = await _parallel_after_right(api, people)
    doc = await _diag(api, people.mon, iid)
    states = {n["key"]: n["state"] for n in doc["nodes"]}
    assert states == {
        "start": "done",
        "copy": "done",
        "fork": "done",
        "left": "active",
        "left2": "not_reached",
        "right": "done",
        "join": "waiting",
        "after": "not_reached",
        "end": "not_reached",
    }
    nodes = {n["key"]: n for n in doc["nodes"]}
    assert nodes["right"]["visits"] == 1 and nodes["right"]["firstEnteredAt"]
    assert nodes["after"]["visits"] == 0 and nodes["after"]["firstEnteredAt"] is None
    (join,) = doc["tokens"]["joins"]
    assert join["joinNode"] == "join" and join["forkNode"] == "fork"
    assert join["expected"] == 2 and join["gateway"] == "parallel"
    assert [a["branch"] for a in join["arrived"]] == ["right"]
    assert [(w["branch"], w["atNodes"]) for w in join["awaited"]] == [("left", ["left"])]
    parked = [t for t in doc["tokens"]["items"] if t["state"] == "parked"]
    assert [t["nodeKey"] for t in parked] == ["join"]
    assert parked[0]["forkStack"][0]["forkNode"] == "fork"
    taken = {(e["from"], e["to"]): e["taken"] for e in doc["diagram"]["edges"]}
    assert taken[("start", "copy")] and taken[("fork", "left")] and taken[("right", "join")]
    assert not taken[("left", "left2")] and not taken[("join", "after")]
    diagram_states = {n["key"]: n["state"] for n in doc["diagram"]["nodes"]}
    assert diagram_states == states
    cc = [t for t in doc["tasks"] if t["cc"]]
    assert [(t["nodeKey"], t["assignee"]) for t in cc] == [("copy", "carl")]
    approved = next(t for t in doc["tasks"] if t["nodeKey"] == "right")
    assert approved["status"] == "completed" and approved["action"] == "approve"
    assert approved["durationMs"] == 0
    assert doc["form"]["data"] == {"days": 1}
    assert doc["definition"]["snapshot"]["key"] == "par"


async def test_failed_node_and_error(api: Api, people: People) -> None:
    await api.deploy(people.root, GATE)
    iid = int((await api.start(people.root, "gate", form={"amount": 1}))["id"])
    doc = await _diag(api, people.mon, iid, view="nodes")
    pick = next(n for n in doc["nodes"] if n["key"] == "pick")
    assert pick["state"] == "failed"
    assert pick["error"]["code"] == "no_matching_condition"


async def test_trace_of_50000_rows_is_paged(api: Api, people: People) -> None:
    await api.deploy(people.root, GATE)
    iid = int((await api.start(people.root, "gate", form={"amount": 50}))["id"])
    now = api.clock.now()
    rows = [
        {
            "instance_id": iid,
            "trace_id": "t",
            "event": "filler",
            "detail": {"n": n},
            "created_at": now,
        }
        for n in range(50_000)
    ]
    async with api.db.begin() as conn:
        for offset in range(0, len(rows), 5000):
            await conn.execute(insert(workflow_trace), rows[offset : offset + 5000])
    page = (await _diag(api, people.mon, iid, view="trace", limit=1000))["trace"]
    assert len(page["items"]) == 1000 and page["total"] > 50_000 and page["next"]
    default = (await _diag(api, people.mon, iid))["trace"]
    assert len(default["items"]) == 200
    second = await _diag(api, people.mon, iid, view="trace", limit=1000, cursor=page["next"])
    ids = [r["id"] for r in page["items"]] + [r["id"] for r in second["trace"]["items"]]
    assert ids == sorted(set(ids)) and len(ids) == 2000
    too_many = await api.get(f"{BASE}/{iid}/diagnostics", people.mon, view="trace", limit=50_000)
    assert too_many.status_code == 422


async def _trigger_job(api: Api, iid: int) -> int:
    now = api.clock.now()
    async with api.db.begin() as conn:
        job = await ledger_of(conn).job_insert(
            conn,
            JobSpec(
                type=TRIGGER_DISPATCH,
                payload={
                    "request": {
                        "url": "https://erp.example/api?token=abc123&x=1",
                        "headers": {"Authorization": "Bearer s3cret-value", "Accept": "json"},
                    }
                },
                trace_id="t",
                tenant_id="default",
                instance_id=iid,
                node_key="big",
            ),
            now=now,
        )
        await conn.execute(
            insert(workflow_job_executions).values(
                job_id=job.job_id,
                generation=1,
                attempt=1,
                status="failed",
                scheduled_at=now,
                started_at=now,
                finished_at=now,
                request={"method": "POST", "headers": {"x-api-key": "k-secret-9"}},
                response={"status": 500, "body": "boom"},
                error="HTTP 500",
            )
        )
    return job.job_id


async def test_triggers_redacted_and_events(api: Api, people: People) -> None:
    await api.deploy(people.root, GATE)
    iid = int((await api.start(people.root, "gate", form={"amount": 50}))["id"])
    job_id = await _trigger_job(api, iid)
    response = await api.get(f"{BASE}/{iid}/diagnostics", people.mon)
    assert "s3cret-value" not in response.text and "k-secret-9" not in response.text
    assert "abc123" not in response.text
    doc = response.json()
    (trigger,) = doc["triggers"]
    assert trigger["id"] == job_id and trigger["type"] == "trigger_dispatch"
    assert trigger["payload"]["request"]["headers"]["Authorization"] == "[redacted]"
    (attempt,) = trigger["executions"]
    assert attempt["error"] == "HTTP 500" and attempt["response"]["status"] == 500
    assert attempt["request"]["headers"]["x-api-key"] == "[redacted]"
    types = [e["eventType"] for e in doc["events"]["items"]]
    assert "instance.started" in types or "task.created" in types
    assert all(e["status"] == "pending" for e in doc["events"]["items"])
    assert doc["events"]["total"] == len(doc["events"]["items"])
    chain_ids = [j["id"] for j in doc["trace"]["jobChain"]["jobs"]]
    assert doc["trace"]["jobChain"]["traceId"] == doc["instance"]["traceId"]
    assert job_id not in chain_ids  # traceId "t" is not the instance's


async def test_bundle(api: Api, people: People) -> None:
    await api.deploy(people.root, GATE)
    iid = int((await api.start(people.root, "gate", form={"amount": 50}))["id"])
    job_id = await _trigger_job(api, iid)
    jump = await api.post(
        f"{BASE}/{iid}/force-jump", people.ops, {"target": "big", "reason": "token=abc redo"}
    )
    assert jump.status_code == 200, jump.text
    response = await api.get(f"{BASE}/{iid}/diagnostic-bundle", people.mon)
    assert response.status_code == 200
    assert response.headers["content-disposition"] == (
        f'attachment; filename="instance-{iid}-bundle.json"'
    )
    assert "s3cret-value" not in response.text and "k-secret-9" not in response.text
    bundle = response.json()
    assert bundle["kind"] == "flowledger.instance-diagnostic-bundle"
    assert bundle["versions"]["flowledger"] and "schemaRevision" in bundle["versions"]
    assert bundle["versions"]["schemaHead"]
    assert set(VIEWS) <= set(bundle["diagnostics"]) and "verdict" in bundle["diagnostics"]
    jobs = {j["id"]: j for j in bundle["jobs"]}
    assert jobs[job_id]["executions"][0]["status"] == "failed"
    assert [a["action"] for a in bundle["audit"]] == ["instance.start", "instance.force_jump"]
    assert bundle["audit"][1]["reason"] == "token=abc redo"
    # the chain bundle carries the same per-instance part
    trace_id = bundle["diagnostics"]["instance"]["traceId"]
    async with api.db.begin() as conn:
        await conn.execute(
            insert(workflow_jobs).values(
                type="delay_wake",
                pool="workflow-ledger",
                status="succeeded",
                payload={},
                tenant_id="default",
                instance_id=iid,
                priority=100,
                run_at=api.clock.now(),
                attempts=1,
                max_attempts=1,
                generation=1,
                execution_timeout_ms=1000,
                operation_key="op-x",
                trace_id=trace_id,
                created_at=api.clock.now(),
                updated_at=api.clock.now(),
            )
        )
    chain = (await api.get(f"/engine/jobs/chain/{trace_id}/diagnostic-bundle", people.mon)).json()
    (instance,) = chain["instances"]
    assert set(instance["diagnostics"]) >= set(VIEWS) and instance["audit"] == bundle["audit"]
    assert [j["id"] for j in instance["jobs"]][: len(jobs)] == list(jobs)
