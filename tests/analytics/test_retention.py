"""Data retention (SPEC O-20) on SQLite and PostgreSQL: every policy removes
exactly the rows past its cut-off and keeps the rest; nothing of a running or
suspended instance, of an instance with a pending compensation ticket, and no
dead or failed job is removed; the preview equals the run; runs are recorded
per policy; disabled policies are skipped;
overlapping runs are refused; the REST surface checks permissions and audits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import (
    operation_audit,
    workflow_event_outbox,
    workflow_tokens,
    workflow_trace,
)
from flowledger.db.event_schema import workflow_subscription_hits
from flowledger.db.health_schema import workflow_health_snapshots
from flowledger.db.retention_schema import workflow_retention_run_items, workflow_retention_runs
from flowledger.db.schema import (
    system_scheduler_nodes,
    workflow_job_effects,
    workflow_job_executions,
    workflow_jobs,
)
from flowledger.handlers.retention_service import DataRetention, latest_slot
from flowledger.ops.retention import runs as ops
from tests.analytics.rows import (
    add_effect,
    add_hit,
    add_instance,
    add_job,
    add_outbox,
    add_subscription,
    add_ticket,
    add_token,
    add_trace,
)
from tests.api.conftest import Api, People
from tests.ledger_access import ledger_of
from tests.ops.rows import add_execution, add_node

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
D = timedelta(days=1)


async def _ids(db: Database, table: object, column: str = "id") -> set[object]:
    async with db.read() as conn:
        return set((await conn.execute(select(table.c[column]))).scalars())  # type: ignore[attr-defined]


async def _count(db: Database, table: object) -> int:
    async with db.read() as conn:
        return int((await conn.execute(select(func.count()).select_from(table))).scalar_one())  # type: ignore[arg-type]


@pytest.fixture
async def world(db: Database, clock: ManualClock) -> dict[str, object]:
    """Rows on both sides of every default cut-off, plus the protected kinds."""
    clock.set(NOW)
    ids: dict[str, object] = {}

    async def done(name: str, days: int, status: str = "approved") -> int:
        ids[name] = await add_instance(
            db,
            "leave",
            created_at=NOW - (days + 1) * D,
            status=status,
            finished_at=NOW - days * D,
        )
        return int(ids[name])  # type: ignore[call-overload]

    await done("old", 200)  # past tokens (90) and trace (180)
    await done("mid", 100)  # past tokens only
    await done("new", 10, "rejected")
    await done("old_ticket", 200, "rejected")  # a pending ticket protects it
    await done("old_resolved", 200, "canceled")  # a resolved ticket does not
    ids["running"] = await add_instance(db, "leave", created_at=NOW - 300 * D)
    ids["suspended"] = await add_instance(db, "leave", created_at=NOW - 300 * D, status="suspended")
    await add_ticket(db, ids["old_ticket"], status="pending", now=NOW - 200 * D)  # type: ignore[arg-type]
    await add_ticket(db, ids["old_resolved"], status="resolved", now=NOW - 200 * D)  # type: ignore[arg-type]
    for name in ("old", "mid", "new", "old_ticket", "old_resolved", "running", "suspended"):
        instance = ids[name]
        ids[f"token_{name}"] = await add_token(db, instance, created_at=NOW - 300 * D)  # type: ignore[arg-type]
        ids[f"trace_{name}"] = await add_trace(db, instance, created_at=NOW - 300 * D)  # type: ignore[arg-type]

    old = NOW - 40 * D
    ids["job_old"] = await add_job(
        db, NOW - 41 * D, status="succeeded", updated_at=old, instance_id=ids["old"]
    )
    await add_execution(db, ids["job_old"], scheduled_at=old, started_at=old)  # type: ignore[arg-type]
    await add_execution(db, ids["job_old"], scheduled_at=old, started_at=old, attempt=2)  # type: ignore[arg-type]
    await add_effect(db, ids["job_old"], now=old)  # type: ignore[arg-type]
    ids["job_canceled"] = await add_job(db, old, status="canceled", updated_at=old)
    ids["job_new"] = await add_job(db, NOW - 10 * D, status="succeeded", updated_at=NOW - 10 * D)
    ids["job_dead"] = await add_job(db, NOW - 100 * D, status="dead", updated_at=NOW - 100 * D)
    ids["job_failed"] = await add_job(db, NOW - 100 * D, status="failed", updated_at=NOW - 100 * D)
    await add_execution(db, ids["job_dead"], scheduled_at=old, started_at=old, status="failed")  # type: ignore[arg-type]
    ids["job_running_instance"] = await add_job(
        db, old, status="succeeded", updated_at=old, instance_id=ids["running"]
    )
    ids["job_suspended_instance"] = await add_job(
        db, old, status="canceled", updated_at=old, instance_id=ids["suspended"]
    )
    ids["job_ticket"] = await add_job(
        db, old, status="succeeded", updated_at=old, instance_id=ids["old_ticket"]
    )

    await add_node(db, "node-gone", heartbeat_at=NOW - 8 * D)
    await add_node(db, "node-recent", heartbeat_at=NOW - 6 * D)

    ids["outbox_old"] = await add_outbox(db, created_at=old)
    ids["outbox_new"] = await add_outbox(db, created_at=NOW - 10 * D)
    ids["outbox_pending"] = await add_outbox(db, created_at=old, status="pending")
    ids["outbox_running"] = await add_outbox(db, created_at=old, instance_id=ids["running"])  # type: ignore[arg-type]
    sub = await add_subscription(db, old)
    ids["hit_old"] = await add_hit(db, sub, status="delivered", updated_at=old)
    ids["hit_new"] = await add_hit(db, sub, status="delivered", updated_at=NOW - 10 * D)
    ids["hit_failed"] = await add_hit(db, sub, status="failed", updated_at=old)
    ids["hit_running"] = await add_hit(
        db, sub, status="delivered", updated_at=old, instance_id=ids["running"]
    )  # type: ignore[arg-type]
    for days in (100, 10):  # health snapshots on both sides of 90 days
        async with db.begin() as conn:
            await conn.execute(
                workflow_health_snapshots.insert().values(
                    taken_at=NOW - days * D, score=100, by_rule={}, by_level={}, runtime={}
                )
            )
    return ids


EXPECTED = {
    "workflow_tokens": {"workflow_tokens": 3},  # old, mid, old_resolved
    "system_scheduler_nodes": {"system_scheduler_nodes": 1},
    "workflow_jobs": {
        "workflow_jobs": 2,  # job_old, job_canceled
        "workflow_job_executions": 2,
        "workflow_job_effects": 1,
    },
    "workflow_trace": {"workflow_trace": 2},  # old, old_resolved
    "workflow_event_outbox": {"workflow_event_outbox": 1, "workflow_subscription_hits": 1},
    "workflow_health_snapshots": {"workflow_health_snapshots": 1},
}


async def test_preview_counts_every_policy_O20(db: Database, world: dict) -> None:
    result = await ops.preview(db, now=NOW)
    items = {i["policy"]: i for i in result["items"]}
    assert list(items) == list(EXPECTED)
    assert {name: i["tables"] for name, i in items.items()} == EXPECTED
    assert items["workflow_health_snapshots"]["skipped"] is None
    assert items["workflow_tokens"]["cutoff"] == NOW - 90 * D
    assert items["system_scheduler_nodes"]["keepDays"] == 7
    assert result["rows"] == 3 + 1 + 5 + 2 + 2 + 1


async def test_run_removes_exactly_the_preview_and_keeps_protected_rows_O20(
    db: Database, world: dict
) -> None:
    before = await ops.preview(db, now=NOW)
    run = await ops.run_retention(db, now=NOW, trigger="manual", actor="ops", batch_size=1)
    assert run["status"] == "succeeded"
    assert {i["policy"]: i["tables"] for i in run["items"]} == {
        i["policy"]: i["tables"] for i in before["items"]
    }
    assert run["rowsRemoved"] == before["rows"]
    # batch_size=1: one transaction per row, plus the short batch that ends a step
    jobs_item = next(i for i in run["items"] if i["policy"] == "workflow_jobs")
    assert jobs_item["batches"] == 3
    w = world
    assert await _ids(db, workflow_tokens) == {
        w["token_new"],
        w["token_old_ticket"],
        w["token_running"],
        w["token_suspended"],
    }
    assert await _ids(db, workflow_trace) == {
        w["trace_mid"],
        w["trace_new"],
        w["trace_old_ticket"],
        w["trace_running"],
        w["trace_suspended"],
    }
    assert await _ids(db, workflow_jobs) == {
        w["job_new"],
        w["job_dead"],
        w["job_failed"],
        w["job_running_instance"],
        w["job_suspended_instance"],
        w["job_ticket"],
    }
    async with db.read() as conn:
        attempts = (await conn.execute(select(workflow_job_executions.c.job_id))).scalars().all()
    assert attempts == [w["job_dead"]]  # the dead job keeps its attempt
    assert await _count(db, workflow_job_effects) == 0
    assert await _ids(db, system_scheduler_nodes) == {"node-recent"}
    assert await _ids(db, workflow_event_outbox) == {
        w["outbox_new"],
        w["outbox_pending"],
        w["outbox_running"],
    }
    assert await _ids(db, workflow_subscription_hits) == {
        w["hit_new"],
        w["hit_failed"],
        w["hit_running"],
    }
    # a second preview finds nothing left; the run is on record per policy
    again = await ops.preview(db, now=NOW)
    assert again["rows"] == 0
    async with db.read() as conn:
        recorded = (await conn.execute(select(workflow_retention_runs))).one()
        items = (await conn.execute(select(workflow_retention_run_items))).all()
    assert (recorded.status, recorded.rows_removed, recorded.trigger) == (
        "succeeded",
        before["rows"],
        "manual",
    )
    assert {i.policy: i.rows_removed for i in items} == {
        name: sum(t.values()) for name, t in EXPECTED.items()
    }


async def test_disabled_policy_and_keep_days_O20(
    db: Database, world: dict, api: Api, people: People
) -> None:
    response = await api.client.patch(
        "/api/workflows/engine/retention/policies",
        headers=people.ops,
        json={
            "policies": [
                {"name": "workflow_jobs", "keepDays": 50},
                {"name": "workflow_trace", "enabled": False},
            ]
        },
    )
    assert response.status_code == 200, response.text
    by_name = {p["name"]: p for p in response.json()["items"]}
    assert by_name["workflow_jobs"]["keepDays"] == 50
    assert by_name["workflow_jobs"]["defaultKeepDays"] == 30
    assert by_name["workflow_trace"]["enabled"] is False
    assert by_name["workflow_trace"]["updatedBy"] == "ops"
    run = await ops.run_retention(db, now=NOW, trigger="manual", actor="ops")
    items = {i["policy"]: i for i in run["items"]}
    assert items["workflow_trace"]["skipped"] == "disabled"
    assert items["workflow_trace"]["rows"] == 0
    assert items["workflow_jobs"]["rows"] == 0  # the 40-day-old jobs are within 50 days
    assert await _count(db, workflow_trace) == 7
    assert world["job_old"] in await _ids(db, workflow_jobs)


async def test_overlapping_runs_are_refused_O20(db: Database, world: dict) -> None:
    async with db.begin() as conn:
        assert await ledger_of(conn).leader_acquire(
            conn, ops.RUN_LEASE, "someone-else", now=NOW, ttl=timedelta(minutes=5)
        )
    with pytest.raises(ops.RetentionRunning):
        await ops.run_retention(db, now=NOW, trigger="manual", actor="ops")
    assert await _count(db, workflow_retention_runs) == 0
    # a run whose process died mid-way (still marked running) is closed as
    # failed by the next run that gets the lease
    async with db.begin() as conn:
        await conn.execute(
            workflow_retention_runs.insert().values(
                trigger="scheduled",
                actor="system",
                status="running",
                started_at=NOW,
                rows_removed=0,
            )
        )
    # once that lease has expired, a run proceeds and releases its own lease
    later = NOW + timedelta(minutes=6)
    await ops.run_retention(db, now=later, trigger="manual", actor="ops")
    await ops.run_retention(db, now=later, trigger="manual", actor="ops")
    async with db.read() as conn:
        statuses = (
            (
                await conn.execute(
                    select(workflow_retention_runs.c.status).order_by(workflow_retention_runs.c.id)
                )
            )
            .scalars()
            .all()
        )
    assert statuses == ["failed", "succeeded", "succeeded"]


async def test_daily_service_runs_once_per_day_on_the_leader_O20(
    db: Database, clock: ManualClock, world: dict
) -> None:
    from datetime import time
    from zoneinfo import ZoneInfo

    zone = ZoneInfo("Asia/Shanghai")
    at = time(3, 0)
    clock.set(datetime(2026, 6, 14, 18, 59, tzinfo=UTC))  # 02:59 in Shanghai
    a = DataRetention(db, clock, interval_s=60, at=at, zone=zone, holder="a")
    b = DataRetention(db, clock, interval_s=60, at=at, zone=zone, holder="b")
    await a.run_once()  # the leader, but the last slot (yesterday 03:00) is due
    assert a.last_run is not None and a.last_run["trigger"] == "scheduled"
    a.last_run = None
    await a.run_once()
    await b.run_once()  # not the leader
    assert a.last_run is None and b.last_run is None
    clock.set(datetime(2026, 6, 14, 19, 0, tzinfo=UTC))  # 03:00: today's slot
    await b.run_once()
    await a.run_once()
    await a.run_once()
    assert b.last_run is None
    assert a.last_run is not None
    assert await _count(db, workflow_retention_runs) == 2
    assert latest_slot(datetime(2026, 6, 14, 19, 0, tzinfo=UTC), zone, at) == datetime(
        2026, 6, 14, 19, 0, tzinfo=UTC
    )


async def test_rest_permissions_preview_run_and_audit_O20(
    api: Api, people: People, world: dict
) -> None:
    base = "/engine/retention"
    assert (await api.get(f"{base}/policies", people.ann)).status_code == 403
    listed = await api.get(f"{base}/policies", people.mon)
    assert listed.status_code == 200
    assert [p["name"] for p in listed.json()["items"]] == list(EXPECTED)
    assert listed.json()["items"][0]["keepDays"] == 90
    # a monitor may preview but not run or patch (refusals audited, before the body)
    assert (await api.post(f"{base}/run", people.mon)).status_code == 403
    patch = await api.client.patch(
        f"/api/workflows{base}/policies", headers=people.mon, json={"bogus": 1}
    )
    assert patch.status_code == 403
    preview = await api.post(f"{base}/preview", people.mon)
    assert preview.status_code == 200
    assert preview.json()["rows"] == 14
    run = await api.post(f"{base}/run", people.ops)
    assert run.status_code == 200, run.text
    assert run.json()["rowsRemoved"] == 14
    assert [i["rows"] for i in run.json()["items"]] == [i["rows"] for i in preview.json()["items"]]
    runs = await api.get(f"{base}/runs", people.mon)
    assert runs.json()["items"][0]["id"] == run.json()["id"]
    audit = await api.rows(operation_audit)
    assert [(a["action"], a["result"], a["actor"]) for a in audit] == [
        ("retention.run", "failed", "mon"),
        ("retention.policies_update", "failed", "mon"),
        ("retention.run", "ok", "ops"),
    ]
    assert audit[-1]["detail"]["rowsRemoved"] == 14


@pytest.mark.parametrize(
    ("body", "field", "code"),
    [
        ({"name": "nope", "keepDays": 3}, "name", "unknown_policy"),
        (
            {"policies": [{"name": "workflow_jobs"}, {"name": "nope"}]},
            "policies[1].name",
            "unknown_policy",
        ),
        (
            {"policies": [{"name": "workflow_jobs"}, {"name": "workflow_jobs"}]},
            "policies[1].name",
            "duplicate_policy",
        ),
        ({"name": "workflow_jobs", "keepDays": 0}, "body.keepDays", "validation_error"),
    ],
)
async def test_patch_refuses_bad_input_and_changes_nothing_O20(
    api: Api, people: People, body: dict, field: str, code: str
) -> None:
    response = await api.client.patch(
        "/api/workflows/engine/retention/policies", headers=people.ops, json=body
    )
    assert response.status_code == 422, response.text
    assert (response.json()["code"], response.json()["field"]) == (code, field)
    listed = await api.get("/engine/retention/policies", people.ops)
    assert all(p["updatedBy"] is None for p in listed.json()["items"])


async def test_unknown_policy_in_run_selection_422_O20(api: Api, people: People) -> None:
    response = await api.post("/engine/retention/run", people.ops, {"policies": ["nope"]})
    assert response.status_code == 422
    assert (response.json()["code"], response.json()["field"]) == ("unknown_policy", "policies[0]")


def test_bad_retention_time_zone_is_a_configuration_error_O20(
    monkeypatch: pytest.MonkeyPatch, db: Database, clock: ManualClock
) -> None:
    from flowledger.errors import ConfigurationError
    from flowledger.handlers.retention_service import retention_service
    from flowledger.settings import get_settings

    monkeypatch.setenv("FLOWLEDGER_RETENTION_TIME_ZONE", "Mars/Olympus")
    monkeypatch.setenv("FLOWLEDGER_RETENTION_TIME_OF_DAY", "04:30")
    with pytest.raises(ConfigurationError) as caught:
        retention_service(db, clock, settings=get_settings())
    assert caught.value.field == "FLOWLEDGER_RETENTION_TIME_ZONE"
    monkeypatch.setenv("FLOWLEDGER_RETENTION_TIME_ZONE", "Europe/Berlin")
    service = retention_service(db, clock, settings=get_settings())
    assert (service.zone.key, service.at.hour, service.at.minute) == ("Europe/Berlin", 4, 30)


async def test_a_failing_policy_is_on_record_with_what_it_removed_O20(
    db: Database, world: dict, monkeypatch: pytest.MonkeyPatch
) -> None:
    from flowledger.ops.retention import purge as retention_purge
    from flowledger.ops.retention.purge import Step

    calls = 0

    async def flaky(
        conn: object, ledger: object, before: datetime, after: object, limit: int
    ) -> object:
        nonlocal calls
        calls += 1
        if calls > 1:
            raise RuntimeError("disk full")
        return await retention_purge.TRACE.batch(conn, ledger, before, after, limit)  # type: ignore[arg-type]

    broken = Step(retention_purge.TRACE.count, flaky)  # type: ignore[arg-type]
    monkeypatch.setitem(retention_purge.STEPS, "workflow_trace", [broken])
    with pytest.raises(RuntimeError):
        await ops.run_retention(
            db,
            now=NOW,
            trigger="manual",
            actor="ops",
            batch_size=1,
            policies=["workflow_tokens", "workflow_trace"],
        )
    (run,) = await ops.list_runs(db)
    assert run["status"] == "failed" and "disk full" in run["error"]
    assert [(i["policy"], i["rows"]) for i in run["items"]] == [
        ("workflow_tokens", 3),
        ("workflow_trace", 1),  # its first batch committed before the failure
    ]
    assert run["rowsRemoved"] == 4
    assert await _count(db, workflow_trace) == 6
