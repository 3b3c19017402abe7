"""Analytics panels (SPEC O-14) over HTTP against a hand-built data set with
exact numbers, on SQLite and PostgreSQL: another tenant's rows never count,
the definition filter narrows every panel, the daily panel includes zero days
and buckets by local date in the requested time zone."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from tests.analytics.rows import (
    add_hit,
    add_instance,
    add_job,
    add_subscription,
    add_task,
)
from tests.api.conftest import Api, People

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
H = timedelta(hours=1)
D = timedelta(days=1)


@pytest.fixture
async def data(db: Database, clock: ManualClock) -> dict[str, int]:
    """Tenant ``default``: leave i1 approved (1 h), i2 rejected (3 h), i3
    running; expense i4 approved (2 h), i5 running (20 days old); sub i6
    running, child of i3. Tenant ``other``: o1 running, o2 approved — which
    must never show up for a caller of ``default``."""
    clock.set(NOW)
    i1 = await add_instance(
        db, "leave", created_at=NOW - 2 * D, status="approved", finished_at=NOW - 2 * D + H
    )
    i2 = await add_instance(
        db, "leave", created_at=NOW - 3 * D, status="rejected", finished_at=NOW - 3 * D + 3 * H
    )
    i3 = await add_instance(db, "leave", created_at=NOW - H)
    i4 = await add_instance(
        db, "expense", created_at=NOW - 10 * D, status="approved", finished_at=NOW - 10 * D + 2 * H
    )
    i5 = await add_instance(db, "expense", created_at=NOW - 20 * D)
    await add_instance(db, "sub", created_at=NOW - H / 2, parent=i3)
    o1 = await add_instance(db, "leave", created_at=NOW - D, tenant="other")
    await add_instance(
        db, "leave", created_at=NOW - D, status="approved", finished_at=NOW - D + H, tenant="other"
    )
    # human tasks
    await add_task(
        db,
        i1,
        "manager",
        "mia",
        created_at=NOW - 2 * D,
        status="completed",
        finished_at=NOW - 2 * D + H,
    )
    await add_task(
        db,
        i1,
        "manager",
        "max",
        created_at=NOW - 2 * D,
        status="skipped",
        finished_at=NOW - 2 * D + H,
    )
    await add_task(
        db,
        i2,
        "manager",
        "mia",
        created_at=NOW - 3 * D,
        status="completed",
        finished_at=NOW - 3 * D + 3 * H,
    )
    await add_task(
        db,
        i2,
        "manager",
        "max",
        created_at=NOW - 3 * D,
        status="completed",
        finished_at=NOW - 3 * D + H / 2,
    )
    t3 = await add_task(db, i3, "manager", "mia", created_at=NOW - H, due_at=NOW - H / 2)
    await add_task(db, i3, "manager", "max", created_at=NOW - H, due_at=NOW + 2 * H)
    await add_task(db, i3, "watchers", "zoe", created_at=NOW - H, status="cc", kind="cc")
    await add_task(
        db,
        i4,
        "review",
        "hal",
        created_at=NOW - 10 * D,
        status="completed",
        finished_at=NOW - 10 * D + 2 * H,
    )
    await add_task(db, i5, "review", "hal", created_at=NOW - 20 * D, due_at=NOW + 30 * H)
    await add_task(db, i5, "review", "hal", created_at=NOW - 20 * D)
    await add_task(db, o1, "manager", "mia", created_at=NOW - D, due_at=NOW - D, tenant="other")
    # jobs, webhook deliveries
    for _ in range(2):
        await add_job(db, NOW, type="webhook_delivery", status="succeeded", instance_id=i1)
    await add_job(
        db, NOW, type="engine_step", pool="workflow-ledger", status="dead", instance_id=i4
    )
    await add_job(
        db, NOW, type="webhook_delivery", status="pending", tenant_id="other", instance_id=o1
    )
    sub = await add_subscription(db, NOW)
    await add_hit(db, sub, status="delivered", updated_at=NOW, instance_id=i1)
    await add_hit(db, sub, status="failed", updated_at=NOW, instance_id=i4)
    other_sub = await add_subscription(db, NOW, tenant="other")
    await add_hit(db, other_sub, status="delivered", updated_at=NOW, instance_id=o1, tenant="other")
    return {"i1": i1, "i3": i3, "t3": t3}


async def _get(api: Api, people: People, panel: str, **params: object) -> dict:
    response = await api.get(f"/analytics/{panel}", people.mon, **params)
    assert response.status_code == 200, response.text
    return dict(response.json())


async def test_totals_O14(api: Api, people: People, data: dict[str, int]) -> None:
    body = await _get(api, people, "totals")
    assert body["instancesByStatus"] == {
        "running": 3,
        "suspended": 0,
        "approved": 2,
        "rejected": 1,
        "withdrawn": 0,
        "canceled": 0,
    }
    assert body["instances"] == 6
    assert body["finished"] == 3
    assert body["avgDurationMs"] == 7_200_000  # (1 h + 3 h + 2 h) / 3
    assert body["pendingTasks"] == 4  # cc and skipped tasks never count
    assert body["startsLast7Days"] == 4  # i1, i2, i3, i6
    leave = await _get(api, people, "totals", definitionKey="leave")
    assert leave["instancesByStatus"]["running"] == 1
    assert (leave["instances"], leave["finished"], leave["avgDurationMs"]) == (3, 2, 7_200_000)
    assert (leave["pendingTasks"], leave["startsLast7Days"]) == (2, 3)
    assert leave["definitionKey"] == "leave"


async def test_top_definitions_O14(api: Api, people: People, data: dict[str, int]) -> None:
    body = await _get(api, people, "top-definitions")
    assert body["items"] == [
        {
            "definitionKey": "leave",
            "total": 3,
            "running": 1,
            "approved": 1,
            "rejected": 1,
            "avgDurationMs": 7_200_000,
        },
        {
            "definitionKey": "expense",
            "total": 2,
            "running": 1,
            "approved": 1,
            "rejected": 0,
            "avgDurationMs": 7_200_000,
        },
        {
            "definitionKey": "sub",
            "total": 1,
            "running": 1,
            "approved": 0,
            "rejected": 0,
            "avgDurationMs": None,
        },
    ]
    # a 7-day period leaves out expense (10 and 20 days old)
    week = await _get(api, people, "top-definitions", days=7)
    assert [i["definitionKey"] for i in week["items"]] == ["leave", "sub"]
    only = await _get(api, people, "top-definitions", definitionKey="expense")
    assert [i["definitionKey"] for i in only["items"]] == ["expense"]


async def test_node_bottlenecks_O14(api: Api, people: People, data: dict[str, int]) -> None:
    body = await _get(api, people, "node-bottlenecks")
    assert body["items"] == [
        # expense/review: one handled (2 h), p90 of one value is that value
        {
            "definitionKey": "expense",
            "nodeKey": "review",
            "handled": 1,
            "avgHandlingMs": 7_200_000,
            "p90HandlingMs": 7_200_000,
            "backlog": 2,
        },
        # leave/manager: 0.5 h, 1 h, 3 h: mean 1.5 h; p90 at position 1.8:
        # 1 h + 0.8 * (3 h - 1 h) = 2.6 h
        {
            "definitionKey": "leave",
            "nodeKey": "manager",
            "handled": 3,
            "avgHandlingMs": 5_400_000,
            "p90HandlingMs": 9_360_000,
            "backlog": 2,
        },
    ]
    leave = await _get(api, people, "node-bottlenecks", definitionKey="leave")
    assert [(i["definitionKey"], i["nodeKey"]) for i in leave["items"]] == [("leave", "manager")]


async def test_approver_workload_O14(api: Api, people: People, data: dict[str, int]) -> None:
    body = await _get(api, people, "approver-workload")
    assert body["items"] == [
        {"assignee": "hal", "pending": 2, "handled": 1, "avgHandlingMs": 7_200_000},
        {"assignee": "mia", "pending": 1, "handled": 2, "avgHandlingMs": 7_200_000},
        {"assignee": "max", "pending": 1, "handled": 1, "avgHandlingMs": 1_800_000},
    ]
    week = await _get(api, people, "approver-workload", days=7)
    hal = next(i for i in week["items"] if i["assignee"] == "hal")
    assert (hal["handled"], hal["avgHandlingMs"]) == (0, None)
    leave = await _get(api, people, "approver-workload", definitionKey="leave")
    assert [i["assignee"] for i in leave["items"]] == ["mia", "max"]


async def test_timeouts_O14(api: Api, people: People, data: dict[str, int]) -> None:
    body = await _get(api, people, "timeouts")
    assert (body["overdue"], body["dueWithin24h"]) == (1, 1)
    assert body["overdueTasks"] == [
        {
            "taskId": data["t3"],
            "instanceId": data["i3"],
            "definitionKey": "leave",
            "nodeKey": "manager",
            "assignee": "mia",
            "dueAt": "2026-06-15T11:30:00Z",
            "overdueSeconds": 1800.0,
            "escalatedAt": None,
        },
    ]
    assert (body["dueSoon"], body["escalated"]) == (1, 0)  # issue 31 item 4: 2 h ahead
    expense = await _get(api, people, "timeouts", definitionKey="expense")
    assert (expense["overdue"], expense["dueWithin24h"], expense["overdueTasks"]) == (0, 0, [])


async def test_async_health_O14(api: Api, people: People, data: dict[str, int]) -> None:
    body = await _get(api, people, "async-health")
    jobs = {j["type"]: j for j in body["jobs"]}
    assert set(jobs) == {"engine_step", "webhook_delivery"}
    assert jobs["webhook_delivery"]["total"] == 2
    assert jobs["webhook_delivery"]["byStatus"]["succeeded"] == 2
    assert jobs["webhook_delivery"]["byStatus"]["pending"] == 0  # other tenant's
    assert jobs["engine_step"]["byStatus"]["dead"] == 1
    assert body["webhookDeliveries"]["byStatus"] == {
        "pending": 0,
        "delivered": 1,
        "failed": 1,
        "skipped": 0,
    }
    assert body["subprocessInstances"]["total"] == 1
    assert body["subprocessInstances"]["byStatus"]["running"] == 1
    leave = await _get(api, people, "async-health", definitionKey="leave")
    assert [j["type"] for j in leave["jobs"]] == ["webhook_delivery"]
    assert leave["webhookDeliveries"]["total"] == 1
    assert leave["subprocessInstances"]["total"] == 1  # i6's parent is a leave
    expense = await _get(api, people, "async-health", definitionKey="expense")
    assert expense["subprocessInstances"]["total"] == 0


async def test_all_tenants_caller_sees_other_tenant_O14(
    api: Api, people: People, data: dict[str, int]
) -> None:
    response = await api.get("/analytics/totals", people.root)
    assert response.json()["instances"] == 8


@pytest.mark.parametrize(
    ("zone", "midnight_utc"),
    [
        ("Asia/Shanghai", datetime(2026, 6, 14, 16, 0, tzinfo=UTC)),  # +08:00
        ("Asia/Kolkata", datetime(2026, 6, 14, 18, 30, tzinfo=UTC)),  # +05:30
        ("America/New_York", datetime(2026, 6, 15, 4, 0, tzinfo=UTC)),  # -04:00 (DST)
    ],
)
async def test_daily_local_days_and_zero_days_O14(
    api: Api,
    people: People,
    db: Database,
    clock: ManualClock,
    zone: str,
    midnight_utc: datetime,
) -> None:
    """``midnight_utc`` is the start of the local day of NOW (2026-06-15)
    in ``zone``, except for New York where NOW is still 06-15 08:00 and the
    probe midnight is 06-15 00:00 local."""
    clock.set(NOW)
    second = timedelta(seconds=1)
    # exactly at local midnight: today; one second before: yesterday
    await add_instance(db, "leave", created_at=midnight_utc)
    await add_instance(
        db, "leave", created_at=midnight_utc - second, status="approved", finished_at=midnight_utc
    )
    # 13 days before today's midnight is the window's first day; one second
    # earlier is outside the window
    first = midnight_utc - 13 * D
    await add_instance(db, "leave", created_at=first)
    await add_instance(db, "leave", created_at=first - second)
    await add_instance(db, "leave", created_at=midnight_utc, tenant="other")
    await add_instance(db, "expense", created_at=midnight_utc)

    body = await _get(api, people, "daily", tz=zone, definitionKey="leave")
    assert body["timeZone"] == zone
    days = body["days"]
    assert len(days) == 14
    assert days[0]["date"] == "2026-06-02" and days[-1]["date"] == "2026-06-15"
    by_date = {d["date"]: (d["starts"], d["finishes"]) for d in days}
    assert by_date["2026-06-15"] == (1, 1)
    assert by_date["2026-06-14"] == (1, 0)
    assert by_date["2026-06-02"] == (1, 0)
    zeros = [d for d in days if d["date"] not in {"2026-06-15", "2026-06-14", "2026-06-02"}]
    assert len(zeros) == 11 and all((d["starts"], d["finishes"]) == (0, 0) for d in zeros)
    # without the filter, expense's start counts too
    everything = await _get(api, people, "daily", tz=zone)
    assert everything["days"][-1] == {"date": "2026-06-15", "starts": 2, "finishes": 1}


async def test_daily_default_zone_is_utc_here_and_bad_zone_422_O14(
    api: Api, people: People, clock: ManualClock
) -> None:
    clock.set(NOW)
    body = await _get(api, people, "daily")
    assert body["timeZone"] in {"UTC", "Etc/UTC"}
    assert [d["starts"] for d in body["days"]] == [0] * 14
    response = await api.get("/analytics/daily", people.mon, tz="Mars/Olympus")
    assert response.status_code == 422
    assert response.json()["code"] == "invalid_time_zone"
    assert response.json()["field"] == "tz"


@pytest.mark.parametrize(
    "panel",
    [
        "totals",
        "daily",
        "top-definitions",
        "node-bottlenecks",
        "approver-workload",
        "timeouts",
        "async-health",
    ],
)
async def test_panels_need_monitor_A2(api: Api, people: People, panel: str) -> None:
    response = await api.get(f"/analytics/{panel}", people.ann)
    assert response.status_code == 403
    assert response.json()["code"] == "forbidden"
