"""Job ledger reads through the REST API (SPEC A-1 … A-4, L-23, L-25):
``workflow:instance:monitor`` on every read route (403 naming it), tenant
scope (another tenant's job or chain is 404, lists and counts leave it out,
the runtime status stays global), 422 naming the field for bad parameters,
camelCase bodies, keyset paging and the bundle download."""

from __future__ import annotations

from datetime import timedelta

import pytest

from flowledger.api.permissions import ALL_PERMISSIONS, INSTANCE_MONITOR
from flowledger.ledger.fingerprint import fingerprint
from tests.api.conftest import Api, People, approval
from tests.ops.rows import add_execution, add_job

JOBS = "/engine/jobs"


@pytest.fixture
async def ledger(api: Api, people: People) -> dict[str, int]:
    """Two dead jobs and a pending one in ``default`` on one trace, a dead
    job in ``globex`` and a system job without a tenant."""
    await api.deploy(people.root, approval())
    instance = await api.start(people.ann)
    now = api.clock.now()
    error = "Timeout after 3000 ms calling https://erp.example/orders/12"
    ids = {
        "dead": await add_job(
            api.db,
            now,
            status="dead",
            last_error=error,
            trace_id="tr-1",
            instance_id=instance["id"],
        ),
        "dead2": await add_job(api.db, now, status="dead", last_error=error.replace("12", "13")),
        "pending": await add_job(api.db, now, trace_id="tr-1", type="delay_wake"),
        "foreign": await add_job(
            api.db, now, status="dead", tenant_id="globex", trace_id="tr-g", last_error=error
        ),
        "system": await add_job(api.db, now, status="dead", tenant_id=None, trace_id="tr-s"),
        "instance": instance["id"],
    }
    await add_execution(api.db, ids["dead"], scheduled_at=now, started_at=now, status="failed")
    return ids


READ_ROUTES = [
    "",
    "/summary",
    "/runtime-status",
    "/failure-clusters",
    "/chain/tr-1",
    "/chain/tr-1/diagnostic-bundle",
    "/{dead}",
]


@pytest.mark.parametrize("route", READ_ROUTES)
async def test_reads_need_monitor_A2(api: Api, ledger: dict[str, int], route: str) -> None:
    everything_else = [p for p in ALL_PERMISSIONS if p != INSTANCE_MONITOR]
    headers = await api.token("busy", *everything_else, tenants=["*"])
    response = await api.get(JOBS + route.format(**ledger), headers)
    assert response.status_code == 403, response.text
    assert response.json()["permission"] == INSTANCE_MONITOR
    assert (await api.get(JOBS + route.format(**ledger), {})).status_code == 401


@pytest.mark.parametrize(
    "route", ["/{foreign}", "/{system}", "/999999", "/chain/tr-g", "/chain/tr-g/diagnostic-bundle"]
)
async def test_other_tenants_jobs_are_not_found_A3(
    api: Api, people: People, ledger: dict[str, int], route: str
) -> None:
    response = await api.get(JOBS + route.format(**ledger), people.mon)
    assert response.status_code == 404, response.text
    assert response.json()["code"] == "not_found"
    if "999999" not in route:  # an admin who sees every tenant gets it
        assert (await api.get(JOBS + route.format(**ledger), people.root)).status_code == 200


async def test_lists_and_counts_leave_other_tenants_out_A3(
    api: Api, people: People, ledger: dict[str, int]
) -> None:
    listed = (await api.get(JOBS, people.mon)).json()
    assert [j["id"] for j in listed["items"]] == [
        ledger["pending"],
        ledger["dead2"],
        ledger["dead"],
    ]
    assert listed["next"] is None
    assert (await api.get(JOBS + "/summary", people.mon)).json()["byStatus"]["dead"] == 2
    assert (await api.get(JOBS + "/summary", people.root)).json()["byStatus"]["dead"] == 4
    clusters = (await api.get(JOBS + "/failure-clusters", people.mon)).json()
    assert clusters["by"] == "reason" and [c["count"] for c in clusters["items"]] == [2]
    # the runtime status is global: a tenant-limited monitor sees every dead job
    status = (await api.get(JOBS + "/runtime-status", people.mon)).json()
    assert (status["dead"], status["backlog"], status["inFlight"]) == (4, 1, 0)


async def test_list_filters_and_paging(api: Api, people: People, ledger: dict[str, int]) -> None:
    dead = await api.get(JOBS, people.root, status=["dead"], limit=2)
    body = dead.json()
    assert [j["id"] for j in body["items"]] == [ledger["system"], ledger["foreign"]]
    more = await api.get(JOBS, people.root, status=["dead"], limit=2, cursor=body["next"])
    assert [j["id"] for j in more.json()["items"]] == [ledger["dead2"], ledger["dead"]]
    fp = fingerprint("Timeout after 1 ms calling https://erp.example/x")
    for params, expected in [
        ({"type": ["delay_wake", "task_timeout"]}, ["pending"]),
        ({"traceId": "tr-1"}, ["pending", "dead"]),
        ({"instanceId": ledger["instance"]}, ["dead"]),
        ({"keyword": "TIMEOUT", "status": ["dead", "failed"]}, ["dead2", "dead"]),
        ({"fingerprint": fp}, ["dead2", "dead"]),
        ({"enqueuedBefore": (api.clock.now() - timedelta(seconds=1)).isoformat()}, []),
    ]:
        response = await api.get(JOBS, people.mon, **params)
        assert response.status_code == 200, response.text
        assert [j["id"] for j in response.json()["items"]] == [ledger[k] for k in expected]
    item = (await api.get(JOBS, people.mon, traceId="tr-1")).json()["items"][1]
    assert item["tenant"] == "default" and item["lastErrorFingerprint"] == fp
    assert {"runAt", "maxAttempts", "traceId", "createdAt"} <= item.keys()
    assert "leaseToken" not in item and "payload" not in item


async def test_detail_chain_and_bundle(api: Api, people: People, ledger: dict[str, int]) -> None:
    job = (await api.get(f"{JOBS}/{ledger['dead']}", people.mon)).json()
    assert job["id"] == ledger["dead"] and job["payload"] == {}
    assert [(e["attempt"], e["status"]) for e in job["executions"]] == [(1, "failed")]
    assert job["executions"][0]["queueDelayMs"] == 0.0

    chain = (await api.get(f"{JOBS}/chain/tr-1", people.mon)).json()
    assert [j["id"] for j in chain["jobs"]] == [ledger["dead"], ledger["pending"]]
    assert chain["instanceIds"] == [ledger["instance"]] and chain["traceId"] == "tr-1"

    response = await api.get(f"{JOBS}/chain/tr-1/diagnostic-bundle", people.mon)
    assert response.status_code == 200
    assert response.headers["content-disposition"] == 'attachment; filename="chain-tr-1.json"'
    bundle = response.json()
    assert [j["id"] for j in bundle["jobs"]] == [ledger["dead"], ledger["pending"]]
    assert bundle["jobs"][0]["executions"][0]["status"] == "failed"
    (instance,) = bundle["instances"]
    assert instance["id"] == ledger["instance"] and instance["tasks"][0]["nodeKey"] == "manager"
    assert instance["tokens"] and instance["trace"]
    assert bundle["generatedAt"].startswith("2026-01-01")


async def test_runtime_status_and_clusters_bodies(
    api: Api, people: People, ledger: dict[str, int]
) -> None:
    status = (await api.get(JOBS + "/runtime-status", people.mon)).json()
    assert set(status) == {
        "now",
        "liveWorkers",
        "slots",
        "inFlight",
        "stuck",
        "backlog",
        "oldestQueuedSeconds",
        "queueP95Ms",
        "queueP99Ms",
        "dead",
        "lastClaimAt",
        "failureRate1h",
        "avgDurationMs1h",
        "attempts1h",
        "failedAttempts1h",
        "replicaLagMs",
        "pausedScopes",
    }
    assert status["replicaLagMs"] is None  # no read replica (issue 34 item 6)
    assert status["pausedScopes"] == []
    assert status["liveWorkers"] == {"active": 0, "total": 0}
    assert status["slots"] == {"inUse": 0, "capacity": 0}
    by_type = (await api.get(JOBS + "/failure-clusters", people.root, by="type", samples=1)).json()
    (cluster,) = by_type["items"]
    assert (cluster["key"], cluster["count"]) == ("webhook_delivery", 4)
    assert cluster["filter"] == {"statuses": ["dead", "failed"], "types": ["webhook_delivery"]}
    assert len(cluster["samples"]) == 1 and cluster["samples"][0]["jobId"] == ledger["system"]


@pytest.mark.parametrize(
    ("route", "params", "field"),
    [
        ("", {"status": "bogus"}, "query.status.0"),
        ("", {"limit": 0}, "query.limit"),
        ("", {"limit": 201}, "query.limit"),
        ("", {"cursor": "!!not-a-cursor"}, "cursor"),
        ("", {"instanceId": "abc"}, "query.instanceId"),
        ("", {"enqueuedBefore": "yesterday"}, "query.enqueuedBefore"),
        ("", {"enqueuedBefore": "2026-01-01T00:00:00"}, "query.enqueuedBefore"),
        ("", {"enqueuedBefore": "0001-01-01T00:00:00+01:00"}, "query.enqueuedBefore"),
        ("", {"keyword": "a\x00b"}, "query.keyword"),
        ("", {"fingerprint": "XYZ"}, "query.fingerprint"),
        ("", {"type": "x" * 65}, "query.type.0"),
        ("/summary", {"status": "nope"}, "query.status.0"),
        ("/failure-clusters", {"by": "colour"}, "query.by"),
        ("/failure-clusters", {"samples": 21}, "query.samples"),
        ("/failure-clusters", {"limit": 0}, "query.limit"),
        ("/abc", {}, "path.jobId"),
        ("/0", {}, "path.jobId"),
        ("/chain/" + "t" * 65, {}, "path.traceId"),
    ],
)
async def test_bad_parameters_are_422_naming_the_field_A4(
    api: Api, people: People, route: str, params: dict[str, object], field: str
) -> None:
    response = await api.get(JOBS + route, people.mon, **params)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field


async def test_static_paths_are_not_job_ids(api: Api, people: People) -> None:
    for route in ("/summary", "/runtime-status", "/failure-clusters"):
        assert (await api.get(JOBS + route, people.mon)).status_code == 200
    assert (await api.get(JOBS + "/chain/none", people.mon)).status_code == 404
