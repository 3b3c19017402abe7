"""Schedules through the API (SPEC E-9, A-2, A-4): create a cron rule (next
fire time computed, initiator = the caller unless an operator names
another), list, and launch on demand — 202 with the ``schedule_launch`` job
that will start the instance. Bad cron or time zone is 422 naming the
field, an unknown definition 404, and nothing is written. A schedule can
be turned off and on (PATCH enabled)."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from flowledger.db.engine_schema import operation_audit, workflow_schedules
from flowledger.db.schema import workflow_jobs
from flowledger.engine import Engine
from tests.api.conftest import Api, People, approval

RULE = {"definitionKey": "leave", "cron": "0 9 * * *", "form": {"days": 1}}


@pytest.fixture
async def leave(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())


async def test_create_list_and_launch(api: Api, people: People, leave: None) -> None:
    response = await api.post("/schedules", people.dev, {**RULE, "name": "daily"})
    assert response.status_code == 201, response.text
    schedule = response.json()
    assert schedule["name"] == "daily" and schedule["initiator"] == "dev"
    assert schedule["tenant"] == "default" and schedule["enabled"] is True
    assert schedule["timezone"] == "UTC"
    assert schedule["nextRunAt"].startswith("2026-01-01T09:00:00")
    listed = (await api.get("/schedules", people.mon)).json()
    assert [s["id"] for s in listed["items"]] == [schedule["id"]] and listed["next"] is None
    launch = await api.post(f"/schedules/{schedule['id']}/launch", people.dev)
    assert launch.status_code == 202, launch.text
    body = launch.json()
    assert body["id"] == body["jobId"] and body["scheduleId"] == schedule["id"]
    async with api.db.read() as conn:
        job = (
            (await conn.execute(select(workflow_jobs).where(workflow_jobs.c.id == body["jobId"])))
            .mappings()
            .one()
        )
    assert job["type"] == "schedule_launch" and job["status"] == "pending"
    assert job["payload"]["scheduleId"] == schedule["id"] and job["payload"]["manual"] is True
    second = await api.post(f"/schedules/{schedule['id']}/launch", people.dev)
    assert second.json()["jobId"] != body["jobId"]


async def test_list_filter_and_paging(api: Api, people: People, leave: None) -> None:
    await api.deploy(people.root, approval("trip"))
    ids = [
        (await api.post("/schedules", people.dev, {**RULE, "definitionKey": key})).json()["id"]
        for key in ("leave", "trip", "leave")
    ]
    page = (await api.get("/schedules", people.dev, limit=2)).json()
    rest = (await api.get("/schedules", people.dev, limit=2, cursor=page["next"])).json()
    assert [s["id"] for s in page["items"] + rest["items"]] == ids[::-1]
    trips = (await api.get("/schedules", people.dev, definitionKey="trip")).json()
    assert [s["id"] for s in trips["items"]] == [ids[1]]


@pytest.mark.parametrize(
    ("change", "status", "code", "field"),
    [
        ({"cron": "every day"}, 422, "schedule_invalid", "cron"),
        ({"timezone": "Mars/Olympus"}, 422, "schedule_invalid", "timezone"),
        ({"definitionKey": "ghost"}, 404, "definition_not_found", "definitionKey"),
        ({"cron": ""}, 422, "validation_error", "body.cron"),
        ({"form": "x"}, 422, "validation_error", "body.form"),
        ({"every": "day"}, 422, "validation_error", "body.every"),
    ],
    ids=["bad-cron", "bad-timezone", "unknown-definition", "empty-cron", "form-type", "extra"],
)
async def test_bad_schedule_writes_nothing(
    api: Api, people: People, leave: None, change: dict, status: int, code: str, field: str
) -> None:
    response = await api.post("/schedules", people.dev, {**RULE, **change})
    assert response.status_code == status, response.text
    assert response.json()["code"] == code and response.json()["field"] == field
    assert await api.count(workflow_schedules) == 0


async def test_other_initiator_needs_operate(api: Api, people: People, leave: None) -> None:
    refused = await api.post("/schedules", people.dev, {**RULE, "initiator": "ann"})
    assert refused.status_code == 403 and refused.json()["permission"].endswith("operate")
    allowed = await api.post("/schedules", people.root, {**RULE, "initiator": "ann"})
    assert allowed.status_code == 201 and allowed.json()["initiator"] == "ann"


async def test_launch_missing_schedule_is_404(api: Api, people: People) -> None:
    response = await api.post("/schedules/77/launch", people.dev)
    assert response.status_code == 404 and response.json()["field"] == "scheduleId"


async def test_schedule_form_is_validated(api: Api, people: People, leave: None) -> None:
    response = await api.post("/schedules", people.dev, {**RULE, "form": {"bogus": 1}})
    assert response.status_code == 422, response.text
    assert response.json()["field"] == "form.bogus"


async def test_a_schedule_turned_off_launches_nothing_until_turned_on_E9(
    api: Api, people: People, leave: None, engine: Engine
) -> None:
    """PATCH {enabled}: off, the planner passes the schedule by; back on, it
    fires next at the first time after now (the missed 09:00s are not made
    up); repeating a setting changes nothing; audited; 403/404/422 as any
    route; a manual launch still works while it is off."""
    schedule = (await api.post("/schedules", people.dev, RULE)).json()
    path = f"/schedules/{schedule['id']}"
    off = await api.client.patch(
        f"/api/workflows{path}", headers=people.dev, json={"enabled": False}
    )
    assert off.status_code == 200, off.text
    assert off.json()["enabled"] is False
    api.clock.advance(seconds=3 * 86400)  # three 09:00s pass
    assert await engine.plan_schedules() == []
    assert await api.count(workflow_jobs) == 0
    launch = await api.post(f"{path}/launch", people.dev)  # explicit: still allowed
    assert launch.status_code == 202
    again = await api.client.patch(
        f"/api/workflows{path}", headers=people.dev, json={"enabled": False}
    )
    assert again.status_code == 200 and again.json() == off.json()
    on = await api.client.patch(f"/api/workflows{path}", headers=people.dev, json={"enabled": True})
    assert on.status_code == 200 and on.json()["enabled"] is True
    assert on.json()["nextRunAt"] > api.clock.now().isoformat()[:19]
    assert await engine.plan_schedules() == []  # nothing missed is made up
    api.clock.advance(seconds=86400)
    assert len(await engine.plan_schedules()) == 1
    audit = [
        (r["action"], r["result"], r["detail"].get("enabled"), r["detail"].get("changed"))
        for r in await api.rows(operation_audit)
        if r["action"] == "schedule.update"
    ]
    assert audit == [
        ("schedule.update", "ok", False, True),
        ("schedule.update", "ok", False, False),
        ("schedule.update", "ok", True, True),
    ]
    for body in ({}, {"enabled": "maybe"}, {"enabled": True, "cron": "* * * * *"}):
        bad = await api.client.patch(f"/api/workflows{path}", headers=people.dev, json=body)
        assert bad.status_code == 422, bad.text
    forbidden = await api.client.patch(
        f"/api/workflows{path}", headers=people.mon, json={"enabled": False}
    )
    assert forbidden.status_code == 403
    missing = await api.client.patch(
        "/api/workflows/schedules/77", headers=people.dev, json={"enabled": False}
    )
    assert (missing.status_code, missing.json()["field"]) == (404, "scheduleId")
    async with api.db.read() as conn:
        row = (await conn.execute(select(workflow_schedules))).mappings().one()
    assert row["enabled"] is True
