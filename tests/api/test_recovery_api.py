"""Engine diagnostics and targeted recovery through the API (SPEC O-18, A-2,
A-3) on both backends: permissions before anything else, other tenants'
instances are 404, an unknown action is 404 ``unknown_recovery_action``,
preview equals run, the run is audited, and the diagnostics' figures match a
state built by hand (nodes, leader lease, a real drain run, outbox rows,
jobs of two tenants)."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import select

from flowledger.db.engine_schema import operation_audit
from flowledger.db.engine_schema import workflow_event_outbox as outbox
from flowledger.db.schema import workflow_jobs
from flowledger.handlers.services import SchedulePlanner
from flowledger.states import Pool
from flowledger.worker.services import DRAIN_TASK, Drain
from tests.api.conftest import Api, People
from tests.ledger_access import ledger_of
from tests.ops.rows import add_job, add_node

DELAY = {
    "key": "nap",
    "name": "Nap",
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "wait", "type": "delay", "duration": "PT1H"},
        {"key": "end", "type": "end"},
    ],
    "edges": [{"from": "start", "to": "wait"}, {"from": "wait", "to": "end"}],
}


async def _dead_wake_job(api: Api, instance_id: int) -> int:
    async with api.db.begin() as conn:
        job_id = (
            await conn.execute(
                select(workflow_jobs.c.id).where(
                    workflow_jobs.c.instance_id == instance_id,
                    workflow_jobs.c.type == "delay_wake",
                )
            )
        ).scalar_one()
        await conn.execute(
            workflow_jobs.update()
            .where(workflow_jobs.c.id == job_id)
            .values(status="dead", last_error="boom")
        )
    return int(job_id)


async def test_recovery_permissions_tenants_and_unknown_actions_O18_A2_A3(
    api: Api, people: People
) -> None:
    await api.deploy(people.root, DELAY)
    mine = await api.start(people.root, "nap", form={})
    acme = await api.token(
        "acme-ops", "workflow:engine:operate", "workflow:instance:monitor", tenants=["acme"]
    )
    # no permission: 403 before the action or the body is looked at
    assert (await api.post("/engine/recovery/delay-wake/preview", people.ann)).status_code == 403
    refused = await api.post("/engine/recovery/nope/run", people.mon, {"limit": 9999})
    assert refused.status_code == 403
    assert refused.json()["permission"] == "workflow:engine:operate"
    bad_and_refused = await api.post("/engine/recovery/delay-wake/preview", people.ann, {"x": 1})
    assert bad_and_refused.status_code == 403
    refusals = [r for r in await api.rows(operation_audit) if r["action"] == "recovery.run"]
    assert [(r["actor"], r["result"], r["detail"]["code"]) for r in refusals] == [
        ("mon", "failed", "forbidden")
    ]
    # unknown action: 404 naming the field
    unknown = await api.post("/engine/recovery/nope/preview", people.ops)
    assert unknown.status_code == 404
    assert unknown.json()["code"] == "unknown_recovery_action"
    assert unknown.json()["field"] == "action"
    assert (await api.post("/engine/recovery/nope/run", people.ops)).status_code == 404
    # another tenant's instance is 404, exactly like a missing one
    for path in ("preview", "run"):
        foreign = await api.post(
            f"/engine/recovery/delay-wake/{path}", acme, {"instanceId": mine["id"]}
        )
        assert foreign.status_code == 404, foreign.text
        assert foreign.json()["field"] == "instanceId"
    # bad body: 422 naming the field, and no audit row
    bad = await api.post("/engine/recovery/delay-wake/preview", people.ops, {"limit": 501})
    assert bad.status_code == 422
    assert bad.json()["field"] == "body.limit"
    two_rates = {"rate": 1, "ratePerSecond": 2}
    assert (
        await api.post("/engine/recovery/delay-wake/run", people.ops, two_rates)
    ).status_code == 422
    # a foreign tenant sees nothing of ours
    await _dead_wake_job(api, mine["id"])
    theirs = await api.post("/engine/recovery/delay-wake/preview", acme)
    assert theirs.json()["count"] == 0


async def test_preview_equals_run_and_the_run_is_audited_O18(api: Api, people: People) -> None:
    await api.deploy(people.root, DELAY)
    ids = [(await api.start(people.root, "nap", form={}))["id"] for _ in range(3)]
    dead = [await _dead_wake_job(api, iid) for iid in ids[:2]]
    preview = await api.post("/engine/recovery/delay-wake/preview", people.ops, {"limit": 5})
    assert preview.status_code == 200, preview.text
    body = preview.json()
    assert body["count"] == 2 and body["byAction"] == {"retry": 2}
    assert [s["jobId"] for s in body["samples"]] == dead
    assert all(s["action"] == "retry" and s["jobType"] == "delay_wake" for s in body["samples"])

    run = await api.post(
        "/engine/recovery/delay-wake/run",
        people.ops,
        {"limit": 5, "ratePerSecond": 1, "reason": "wake jobs died in the outage"},
    )
    assert run.status_code == 200, run.text
    result = run.json()
    assert [i["jobId"] for i in result["items"]] == [s["jobId"] for s in body["samples"]]
    assert result["totals"] == {"total": 2, "done": 2, "skipped": 0, "failed": 0}
    assert all(i["outcome"] == "done" for i in result["items"])
    # staggered like replay: at 1/s the second is due one second after the first
    async with api.db.read() as conn:
        run_ats = (
            await conn.execute(
                select(workflow_jobs.c.run_at, workflow_jobs.c.replay_batch_id)
                .where(workflow_jobs.c.id.in_(dead))
                .order_by(workflow_jobs.c.id)
            )
        ).all()
    assert run_ats[1].run_at - run_ats[0].run_at == timedelta(seconds=1)
    assert {r.replay_batch_id for r in run_ats} == {result["batchId"]}
    audit = [r for r in await api.rows(operation_audit) if r["action"] == "recovery.run"]
    assert len(audit) == 1
    assert audit[0]["target_id"] == "delay-wake" and audit[0]["result"] == "ok"
    assert audit[0]["reason"] == "wake jobs died in the outage"
    assert audit[0]["detail"]["done"] == 2 and audit[0]["detail"]["batchId"] == result["batchId"]
    # nothing left
    after = await api.post("/engine/recovery/delay-wake/preview", people.ops)
    assert after.json()["count"] == 0


async def test_engine_diagnostics_figures_match_a_known_state_O18(api: Api, people: People) -> None:
    clock = api.clock
    now = clock.now()
    assert (await api.get("/engine/diagnostics", people.ann)).status_code == 403
    # a delay_wake job claimed by a worker that died: the drain reclaims it
    lost = await add_job(api.db, now, type="delay_wake", pool=Pool.LEDGER.value)
    assert [
        j.id
        for j in await ledger_of(api.db).jobs_claim(
            api.db, pool=Pool.LEDGER, limit=5, node_id="x", now=now
        )
    ] == [lost]
    clock.advance(seconds=120)
    now = clock.now()
    await add_node(api.db, "live-node", heartbeat_at=now - timedelta(seconds=5), slots_in_use=3)
    await add_node(api.db, "quiet-node", heartbeat_at=now - timedelta(minutes=5))
    await add_node(api.db, "gone-node", heartbeat_at=now - timedelta(minutes=11))
    await add_node(api.db, "stopped-node", heartbeat_at=now, status="stopped")
    drain = Drain(api.db, clock, "live-node", interval_s=60)
    await drain.run_once()
    await SchedulePlanner(api.db, clock, elector=drain.elector).run_once()  # one elector
    # jobs of two tenants
    for _ in range(3):
        await add_job(api.db, now - timedelta(minutes=5), type="webhook_delivery")
    await add_job(api.db, now + timedelta(hours=1), type="webhook_delivery")
    await add_job(api.db, now, type="webhook_delivery", status="dead")
    await add_job(api.db, now - timedelta(minutes=50), type="webhook_delivery", tenant_id="acme")
    async with api.db.begin() as conn:
        for tenant, status, age in [
            ("default", "pending", 7),
            ("default", "failed", 3),
            ("acme", "pending", 60),
        ]:
            await conn.execute(
                outbox.insert().values(
                    tenant_id=tenant,
                    event_type="instance.started",
                    payload={},
                    status=status,
                    trace_id="t",
                    created_at=now - timedelta(minutes=age),
                )
            )
    monitor = await api.token("watcher", "workflow:instance:monitor", tenants=["default"])
    response = await api.get("/engine/diagnostics", monitor)
    assert response.status_code == 200, response.text
    data = response.json()

    nodes = {n["id"]: n for n in data["nodes"]}
    # live as the runtime status counts them (L-23): a heartbeat in the last
    # 10 min; active: status active and a heartbeat within 90 s
    assert set(nodes) == {"live-node", "quiet-node", "stopped-node"}
    assert [n for n in nodes if nodes[n]["active"]] == ["live-node"]
    assert nodes["stopped-node"]["status"] == "stopped"
    assert nodes["live-node"]["slotsInUse"] == 3
    assert nodes["live-node"]["heartbeatAgeS"] == 5.0
    leaders = {row["name"]: row for row in data["leaders"]}
    assert leaders[DRAIN_TASK] == {
        "name": DRAIN_TASK,
        "holder": "live-node",
        "leaseUntil": leaders[DRAIN_TASK]["leaseUntil"],
        "valid": True,
    }
    # the planner is leader-gated too, behind the same elector (issue 16)
    assert set(leaders) == {DRAIN_TASK, "schedule_planner"}
    assert leaders["schedule_planner"]["holder"] == "live-node"
    runs = {DRAIN_TASK: data["drain"], "schedule_planner": data["schedulePlanner"]}
    assert runs[DRAIN_TASK]["summary"]["reclaimedToPending"] == 1
    assert runs[DRAIN_TASK]["summary"]["pendingIds"] == [lost]
    assert runs[DRAIN_TASK]["nodeId"] == "live-node"
    assert runs["schedule_planner"]["summary"] == {"launchJobs": 0, "jobIds": []}
    assert runs["schedule_planner"]["finishedAt"] == data["now"]
    # outbox: the caller's tenant only
    assert data["outbox"]["pending"] == 1 and data["outbox"]["failed"] == 1
    assert data["outbox"]["oldestPending"]["ageS"] == 420.0
    # queue: the drain's reclaimed job is a system job of tenant default
    counts = {(c["type"], c["status"]): c["count"] for c in data["queue"]["byTypeStatus"]}
    assert counts == {
        ("webhook_delivery", "pending"): 4,
        ("webhook_delivery", "dead"): 1,
        ("delay_wake", "pending"): 1,
    }
    oldest = {o["type"]: o for o in data["queue"]["oldestDueByType"]}
    assert oldest["webhook_delivery"]["due"] == 3
    assert oldest["webhook_delivery"]["ageS"] == 300.0
    pools = {p["pool"]: p for p in data["queue"]["pools"]}
    assert pools[Pool.OUTBOUND.value]["pending"] == 4
    assert pools[Pool.OUTBOUND.value]["due"] == 3
    assert data["settings"]["leaseMs"] == 60_000
    assert {t["name"] for t in data["settings"]["jobTypes"]} >= {"delay_wake", "event_dispatch"}
