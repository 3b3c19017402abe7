"""The health inspection, score and history over HTTP (SPEC O-16, A-2,
A-3), on both backends: the item and summary shape, the threshold range
(422 on ``thresholdMinutes``), the rule / level / definitionKey filters,
keyset paging, tenant scope, 403 without ``workflow:instance:monitor``, and
the leader-gated snapshots read back at most one per interval."""

from __future__ import annotations

from datetime import timedelta

import pytest

from flowledger.api.permissions import INSTANCE_MONITOR, TASK_ACT
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.health_schema import workflow_health_snapshots
from flowledger.engine import Engine
from flowledger.handlers.health_service import HealthSnapshots
from flowledger.ops.retention import runs as retention
from tests.api.conftest import Api
from tests.integration.engine_helpers import tasks
from tests.ops.health_support import approval_flow, dead_end_flow, flush_events

PATH = "/engine/health-inspection"


async def _broken(engine: Engine, db: Database, clock: ManualClock) -> tuple[int, int, int]:
    """Two stalled instances (critical) and one stuck approval (warning)."""
    await engine.deploy(dead_end_flow(), actor="a")
    await engine.deploy(approval_flow(), actor="a")
    stalled = [await engine.start("dead", form={"amount": 1}, initiator="u") for _ in range(2)]
    waiting = await engine.start("leave", form={}, initiator="u")
    await flush_events(db, clock)
    clock.advance(seconds=45 * 60)
    return stalled[0], stalled[1], waiting


async def test_inspection_items_summary_and_filters_O16(
    api: Api, engine: Engine, db: Database, clock: ManualClock
) -> None:
    one, two, waiting = await _broken(engine, db, clock)
    (task,) = await tasks(db, waiting)
    mon = await api.token("mon", INSTANCE_MONITOR)
    response = await api.get(PATH, mon)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["thresholdMinutes"] == 30
    assert [(i["rule"], i["level"], i["instanceId"]) for i in body["items"]] == [
        ("instance_stalled", "critical", one),
        ("instance_stalled", "critical", two),
        ("waiting_task_stuck", "warning", waiting),
    ]
    item = body["items"][2]
    assert set(item) == {
        "rule",
        "level",
        "instanceId",
        "taskId",
        "nodeKey",
        "jobId",
        "since",
        "message",
        "suggestion",
        "messageParams",
        "recoveryAction",
        "repair",
    }
    # the repair the drawer offers for the same problem (O-12)
    assert item["repair"] == {
        "action": "remind",
        "params": {"taskId": task["id"], "assignee": "alice"},
    }
    assert (item["taskId"], item["nodeKey"], item["jobId"]) == (task["id"], "manager", None)
    assert "alice" in item["message"] and "remind" in item["suggestion"]
    assert item["recoveryAction"] is None  # remind / transfer: a repair on the instance
    summary = body["summary"]
    assert summary["byRule"]["instance_stalled"] == 2
    assert summary["byRule"]["waiting_task_stuck"] == 1
    assert summary["byRule"]["delay_overdue"] == 0 and len(summary["byRule"]) == 14
    assert summary["byLevel"] == {"critical": 2, "warning": 1}
    assert summary["score"] == 100 - 10 - 1
    assert body["next"] is None

    warn = (await api.get(PATH, mon, level="warning")).json()
    assert [i["instanceId"] for i in warn["items"]] == [waiting]
    assert warn["summary"]["byLevel"] == {"critical": 2, "warning": 1}  # the whole inspection
    stalled = (await api.get(PATH, mon, rule="instance_stalled")).json()
    assert [i["instanceId"] for i in stalled["items"]] == [one, two]
    leave = (await api.get(PATH, mon, definitionKey="leave")).json()
    assert [i["instanceId"] for i in leave["items"]] == [waiting]
    assert (await api.get(PATH, mon, thresholdMinutes=60)).json()["items"][-1]["rule"] == (
        "instance_stalled"
    )


async def test_items_carry_the_params_of_their_message_O16(
    api: Api, engine: Engine, db: Database, clock: ManualClock
) -> None:
    """``messageParams``: the values the English message is made of (the
    console words it per rule in zh-CN / en from them), JSON scalars."""
    one, _, waiting = await _broken(engine, db, clock)
    (task,) = await tasks(db, waiting)
    mon = await api.token("mon", INSTANCE_MONITOR)
    body = (await api.get(PATH, mon)).json()
    items = {(i["rule"], i["instanceId"]): i for i in body["items"]}
    stuck = items["waiting_task_stuck", waiting]
    assert stuck["messageParams"] == {
        "taskId": task["id"],
        "nodeKey": "manager",
        "ageMinutes": 45,
        "assignee": "alice",
    }
    assert stuck["message"] == f"task {task['id']} at «manager» has waited 45 min for alice"
    stalled = items["instance_stalled", one]
    assert stalled["messageParams"] == {"ageMinutes": 45}
    assert stalled["message"].endswith("(since 45 min)")
    clock.advance(seconds=3 * 3600)
    later = (await api.get(PATH, mon, rule="waiting_task_stuck")).json()["items"]
    assert later[0]["messageParams"]["ageMinutes"] == 45 + 180
    assert later[0]["message"].endswith("has waited 3 h for alice")


async def test_keyset_paging_O16(
    api: Api, engine: Engine, db: Database, clock: ManualClock
) -> None:
    one, two, waiting = await _broken(engine, db, clock)
    mon = await api.token("mon", INSTANCE_MONITOR)
    seen: list[int] = []
    cursor = None
    for _ in range(5):
        params = {"limit": 1} | ({"cursor": cursor} if cursor else {})
        page = (await api.get(PATH, mon, **params)).json()
        seen += [i["instanceId"] for i in page["items"]]
        cursor = page["next"]
        if cursor is None:
            break
    assert seen == [one, two, waiting]
    bad = await api.get(PATH, mon, cursor="nonsense")
    assert bad.status_code == 422 and bad.json()["field"] == "cursor"


@pytest.mark.parametrize("value", [9, 1441, 0, -5])
async def test_threshold_outside_the_range_is_422_O16(api: Api, value: int) -> None:
    mon = await api.token("mon", INSTANCE_MONITOR)
    response = await api.get(PATH, mon, thresholdMinutes=value)
    assert response.status_code == 422
    assert response.json()["field"] == "thresholdMinutes"
    for ok in (10, 1440):
        assert (await api.get(PATH, mon, thresholdMinutes=ok)).status_code == 200


async def test_unknown_rule_or_level_is_422_O16(api: Api) -> None:
    mon = await api.token("mon", INSTANCE_MONITOR)
    assert (await api.get(PATH, mon, rule="nope")).status_code == 422
    assert (await api.get(PATH, mon, level="info")).status_code == 422


async def test_permission_and_tenant_scope_A2_A3(
    api: Api, engine: Engine, db: Database, clock: ManualClock
) -> None:
    await _broken(engine, db, clock)
    actor = await api.token("ann", TASK_ACT)
    for path in (PATH, "/engine/health-history", "/engine/health-score"):
        response = await api.get(path, actor)
        assert response.status_code == 403
        assert response.json()["permission"] == INSTANCE_MONITOR
    elsewhere = await api.token("eve", INSTANCE_MONITOR, tenants=["acme"])
    body = (await api.get(PATH, elsewhere)).json()
    assert body["items"] == [] and body["summary"]["byLevel"] == {"critical": 0, "warning": 0}
    score = (await api.get("/engine/health-score", elsewhere)).json()
    assert score["score"] == 100 and score["inputs"]["critical"] == 0


async def test_health_score_points_O16(
    api: Api, engine: Engine, db: Database, clock: ManualClock
) -> None:
    await _broken(engine, db, clock)
    mon = await api.token("mon", INSTANCE_MONITOR)
    body = (await api.get("/engine/health-score", mon)).json()
    assert body["score"] == 89
    assert body["points"]["critical"] == 10 and body["points"]["warning"] == 1
    assert body["inputs"]["critical"] == 2 and body["inputs"]["deadJobs"] == 0


async def test_history_is_leader_gated_and_one_point_per_interval_O16(
    api: Api, engine: Engine, db: Database, clock: ManualClock
) -> None:
    await _broken(engine, db, clock)
    first = HealthSnapshots(db, clock, interval_s=300, holder="node-a")
    second = HealthSnapshots(db, clock, interval_s=300, holder="node-b")
    assert await first.snapshot_once() is True
    assert await second.snapshot_once() is False  # node-a holds the lease
    clock.advance(seconds=60)
    assert await first.snapshot_once() is False  # within the interval
    for _ in range(3):
        clock.advance(seconds=300)
        assert await first.snapshot_once() is True
    assert await api.count(workflow_health_snapshots) == 4
    mon = await api.token("mon", INSTANCE_MONITOR)
    start = (clock.now() - timedelta(hours=1)).isoformat()
    response = await api.get("/engine/health-history", mon, **{"from": start})
    assert response.status_code == 200, response.text
    # `to` within a day of year 1: the default window starts at year 1, no 500
    early = await api.get("/engine/health-history", mon, to="0001-01-01T12:00:00Z")
    assert early.status_code == 200, early.text
    assert early.json()["points"] == []
    body = response.json()
    assert body["intervalSeconds"] == 300
    points = body["points"]
    assert len(points) == 4
    assert [p["score"] for p in points] == [89] * 4
    assert points[0]["byRule"]["instance_stalled"] == 2
    assert points[0]["byLevel"] == {"critical": 2, "warning": 1}
    assert set(points[0]["runtime"]) >= {"stuck", "backlog", "dead", "failureRate1h"}
    taken = [p["takenAt"] for p in points]
    assert taken == sorted(taken)
    # the leader's lease lapses: node-b takes over, never doubling a point
    clock.advance(seconds=700)
    assert await second.snapshot_once() is True
    assert await first.snapshot_once() is False
    bad = await api.get(
        "/engine/health-history", mon, **{"from": clock.now().isoformat(), "to": start}
    )
    assert bad.status_code == 422 and bad.json()["field"] == "from"


async def test_snapshots_are_kept_until_the_retention_policy_removes_them_O16_O20(
    api: Api, db: Database, clock: ManualClock
) -> None:
    """The snapshot service never deletes; the ``workflow_health_snapshots``
    retention policy (90 days by default) does."""
    service = HealthSnapshots(db, clock, interval_s=300, holder="node-a")
    assert await service.snapshot_once() is True
    clock.advance(seconds=91 * 86400)
    assert await service.snapshot_once() is True
    assert await api.count(workflow_health_snapshots) == 2
    run = await retention.run_retention(db, now=clock.now(), trigger="manual", actor="ops")
    removed = {i["policy"]: i["tables"] for i in run["items"]}
    assert removed["workflow_health_snapshots"] == {"workflow_health_snapshots": 1}
    rows = await api.rows(workflow_health_snapshots)
    assert [r["taken_at"] for r in rows] == [clock.now()]
