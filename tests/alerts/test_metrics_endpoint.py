"""``GET /metrics`` (SPEC O-22, L-23): parses with prometheus-client's own
parser; for a known state the alert gauges equal the runtime status panel's
figures (overall and per tenant), the ledger counters and gauge histograms
count the rows, workers and slots match; the optional bearer token."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from flowledger.api.permissions import INSTANCE_MONITOR
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ops.health.score import engine_health_score
from flowledger.ops.runtime.status import runtime_status
from tests.alerts.support import rule
from tests.api.conftest import Api
from tests.ops.rows import add_execution, add_job, add_node

MIN = timedelta(minutes=1)


def parse(text: str) -> dict[str, Any]:
    """{family name: family} and {(sample name, sorted labels): value}."""
    families = {f.name: f for f in text_string_to_metric_families(text)}
    samples = {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for f in families.values()
        for s in f.samples
    }
    return {"families": families, "samples": samples}


async def known_state(db: Database, clock: ManualClock) -> None:
    """Rows around the database's time: /metrics, like the runtime status
    panel, reads at database time (the test clock is moved there)."""
    clock.set(await db.now())
    now = clock.now()
    await add_node(db, "w1", heartbeat_at=now - 10 * timedelta(seconds=1), slots_in_use=3)
    await add_node(db, "w2", heartbeat_at=now - 5 * MIN, slots_in_use=1)
    await add_node(db, "gone", heartbeat_at=now - 20 * MIN, slots_in_use=9)
    # acme: 2 due pending, 1 future pending, 1 dead, 1 stuck running, 1 succeeded
    for _ in range(2):
        await add_job(db, now - MIN, tenant_id="acme", type="delay_wake", pool="workflow-ledger")
    await add_job(db, now + MIN, tenant_id="acme")
    await add_job(db, now, tenant_id="acme", status="dead", last_error="boom")
    await add_job(db, now, tenant_id="acme", status="running", lease_until=now - MIN)
    ok = await add_job(db, now, tenant_id="acme", status="succeeded")
    # globex: 1 dead, 1 healthy running, 1 failed attempt in the hour
    await add_job(db, now, tenant_id="globex", status="dead", last_error="boom")
    await add_job(
        db,
        now,
        tenant_id="globex",
        status="running",
        lease_until=now + MIN,
        execution_deadline=now + 5 * MIN,
    )
    bad = await add_job(db, now, tenant_id="globex", status="pending", run_at=now + 10 * MIN)
    await add_execution(
        db,
        ok,
        scheduled_at=now - 10 * MIN,
        started_at=now - 10 * MIN + timedelta(seconds=2),
        duration_ms=300,
    )
    await add_execution(
        db,
        bad,
        scheduled_at=now - 5 * MIN,
        started_at=now - 5 * MIN + timedelta(seconds=20),
        status="failed",
        duration_ms=1500,
    )
    await add_execution(  # older than the hour: not in rates or histograms
        db,
        bad,
        scheduled_at=now - 2 * 60 * MIN,
        started_at=now - 2 * 60 * MIN,
        attempt=2,
        status="failed",
        duration_ms=100,
    )


async def test_metrics_parse_and_equal_the_runtime_status_O22_L23(
    db: Database, clock: ManualClock, client: httpx.AsyncClient
) -> None:
    await known_state(db, clock)
    await rule(db, clock, tenant="acme")
    await rule(db, clock, tenant="globex")
    response = await client.get("/metrics")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    parsed = parse(response.text)
    samples = parsed["samples"]
    status = await runtime_status(db)  # at database time, as GET /runtime-status

    def gauge(name: str, tenant: str) -> float:
        return float(samples[(name, (("tenant", tenant),))])

    assert gauge("flowledger_queue_backlog_items", "*") == status["backlog"] == 2
    # the same gauges under the names SPEC O-22 gives them
    for bare, prefixed in (
        ("queue_backlog", "flowledger_queue_backlog_items"),
        ("dead_letters", "flowledger_dead_letters_items"),
        ("stuck_jobs", "flowledger_stuck_jobs_items"),
        ("job_failure_rate", "flowledger_job_failure_rate_percent"),
        ("engine_health_score", "flowledger_engine_health_score_points"),
    ):
        assert parsed["families"][bare].type == "gauge"
        assert gauge(bare, "*") == gauge(prefixed, "*"), bare
    assert gauge("flowledger_dead_letters_items", "*") == status["dead"] == 2
    assert gauge("flowledger_stuck_jobs_items", "*") == status["stuck"] == 1
    assert gauge("flowledger_job_failure_rate_percent", "*") == status["failureRate1h"] * 100
    assert gauge("flowledger_job_failure_rate_percent", "*") == 50.0
    per_tenant = {
        t: [
            gauge(f"flowledger_{m}", t)
            for m in ("queue_backlog_items", "dead_letters_items", "stuck_jobs_items")
        ]
        for t in ("acme", "globex")
    }
    assert per_tenant == {"acme": [2, 1, 1], "globex": [0, 1, 0]}
    assert gauge("flowledger_job_failure_rate_percent", "acme") == 0.0
    assert gauge("flowledger_job_failure_rate_percent", "globex") == 100.0
    # the health inspection's score (SPEC O-16) at the database's time
    async with db.begin() as conn:
        score = await engine_health_score(conn, None, now=await db.now())
    assert parsed["families"]["flowledger_engine_health_score_points"].type == "gauge"
    assert gauge("flowledger_engine_health_score_points", "*") == score.score
    for family in ("flowledger_queue_backlog_items", "flowledger_dead_letters_items"):
        assert parsed["families"][family].type == "gauge"

    assert samples[("flowledger_workers_live", ())] == status["liveWorkers"]["total"] == 2
    assert samples[("flowledger_workers_active", ())] == status["liveWorkers"]["active"] == 1
    assert samples[("flowledger_slots_in_use", ())] == status["slots"]["inUse"] == 4
    assert samples[("flowledger_slots_capacity", ())] == status["slots"]["capacity"] == 16

    enqueued = parsed["families"]["flowledger_jobs_enqueued"]
    assert enqueued.type == "counter"
    assert {s.labels["type"]: s.value for s in enqueued.samples} == {
        "delay_wake": 2,
        "webhook_delivery": 7,
    }
    settled = {
        (s.labels["type"], s.labels["outcome"]): s.value
        for s in parsed["families"]["flowledger_jobs_settled"].samples
    }
    assert settled == {("webhook_delivery", "dead"): 2, ("webhook_delivery", "succeeded"): 1}
    assert samples[("flowledger_jobs", (("status", "running"), ("type", "webhook_delivery")))] == 2

    duration = parsed["families"]["flowledger_job_attempt_duration_seconds"]
    buckets = {s.labels["le"]: s.value for s in duration.samples if s.name.endswith("_bucket")}
    assert buckets["0.25"] == 0 and buckets["0.5"] == 1 and buckets["2.5"] == 2
    assert buckets["+Inf"] == 2  # the attempt two hours ago is outside the window
    assert samples[
        ("flowledger_job_attempt_duration_seconds_gsum", (("type", "webhook_delivery"),))
    ] == pytest.approx(1.8)
    delay = {
        s.labels["le"]: s.value
        for s in parsed["families"]["flowledger_job_queue_delay_seconds"].samples
        if s.name.endswith("_bucket")
    }
    assert (delay["1"], delay["2"], delay["10"], delay["30"], delay["+Inf"]) == (0, 1, 1, 2, 2)
    assert samples[
        ("flowledger_job_queue_delay_seconds_gsum", (("pool", "workflow-ledger-outbound"),))
    ] == pytest.approx(22.0)


async def test_metrics_equal_the_runtime_status_endpoint_O22_L23(
    db: Database, clock: ManualClock, api: Api
) -> None:
    await known_state(db, clock)
    monitor = await api.token("watcher", INSTANCE_MONITOR, tenants=["*"])
    panel = (await api.get("/engine/jobs/runtime-status", monitor)).json()
    samples = parse((await api.client.get("/metrics")).text)["samples"]
    overall = (("tenant", "*"),)
    assert samples[("flowledger_queue_backlog_items", overall)] == panel["backlog"]
    assert samples[("flowledger_dead_letters_items", overall)] == panel["dead"]
    assert samples[("flowledger_stuck_jobs_items", overall)] == panel["stuck"]
    assert samples[("flowledger_job_failure_rate_percent", overall)] == pytest.approx(
        panel["failureRate1h"] * 100
    )
    assert samples[("flowledger_workers_live", ())] == panel["liveWorkers"]["total"]
    assert samples[("flowledger_workers_active", ())] == panel["liveWorkers"]["active"]
    assert samples[("flowledger_slots_in_use", ())] == panel["slots"]["inUse"]
    assert samples[("flowledger_slots_capacity", ())] == panel["slots"]["capacity"]


async def test_metrics_of_an_empty_ledger_have_zeros_and_no_failure_rate_O22(
    db: Database, client: httpx.AsyncClient
) -> None:
    parsed = parse((await client.get("/metrics")).text)
    samples = parsed["samples"]
    assert samples[("flowledger_queue_backlog_items", (("tenant", "*"),))] == 0
    assert samples[("flowledger_workers_live", ())] == 0
    assert not parsed["families"]["flowledger_job_failure_rate_percent"].samples


@pytest.fixture
def metrics_token(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.setenv("FLOWLEDGER_METRICS_TOKEN", "scrape-me")
    yield "scrape-me"


async def test_metrics_bearer_token_when_set_O22(
    db: Database, client: httpx.AsyncClient, metrics_token: str
) -> None:
    missing = await client.get("/metrics")
    assert missing.status_code == 401 and missing.json()["code"] == "unauthenticated"
    wrong = await client.get("/metrics", headers={"Authorization": "Bearer nope"})
    assert wrong.status_code == 401
    right = await client.get("/metrics", headers={"Authorization": f"Bearer {metrics_token}"})
    assert right.status_code == 200
    assert "flowledger_dead_letters_items" in right.text
    assert (await client.get("/api/workflows/metrics")).status_code == 404  # at the root only
