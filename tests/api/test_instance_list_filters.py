"""The monitoring instance list (SPEC O-1): every filter of
``GET /instances`` — definition key and version, several statuses,
initiator, started and finished ranges, current node, current assignee,
has error, stuck for N minutes, parent instance, keyword (id, trace id,
form text with ``%`` and ``_`` literal) — the sorts (created / updated /
finished) with keyset paging, and the per-status counts of
``GET /instances/counts`` for the same filter, within the caller's tenants.
Instances are made by the engine; states only a crash or another component
could make (an error text, a dead job, a parent link) by direct writes."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import update

from flowledger.db.engine_schema import workflow_instances
from flowledger.db.schema import workflow_jobs
from flowledger.engine.job_types import TRIGGER_DISPATCH
from flowledger.ledger.models import JobSpec
from tests.api.conftest import Api, People, approval
from tests.ledger_access import ledger_of


async def _ids(api: Api, who: dict[str, str], **params: Any) -> list[int]:
    response = await api.get("/instances", who, **params)
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["items"]]


class World:
    """leave v1 (mia approves) and v2 (max approves), trip (max approves):
    - a: leave v1 by ann, approved by mia      (finished)
    - b: leave v1 by ann, running at manager/mia, form note "50% off"
    - c: leave v2 by ann, running at manager/max, form note "under_score 上海"
    - d: trip by max, running, later suspended
    - e: leave v2 by ann, canceled (finished)
    one minute between starts."""

    def __init__(self, ids: dict[str, int], traces: dict[str, str], t0: Any) -> None:
        self.ids = ids
        self.traces = traces
        self.t0 = t0

    def __getattr__(self, name: str) -> int:
        return self.ids[name]


@pytest.fixture
async def world(api: Api, people: People) -> World:
    root = people.root
    await api.deploy(root, approval())
    t0 = api.clock.now()
    ids: dict[str, int] = {}
    traces: dict[str, str] = {}

    async def start(name: str, key: str = "leave", **body: Any) -> None:
        started = await api.start(body.pop("who", people.ann), key, **body)
        ids[name], traces[name] = started["id"], started["traceId"]
        api.clock.advance(seconds=60)

    await start("a", form={"days": 1, "note": "beach"})
    await start("b", form={"days": 2, "note": "50% off"})
    await api.deploy(root, approval(assignees=["max"]))
    await api.deploy(root, approval("trip", assignees=["max"]))
    await start("c", form={"days": 3, "note": "under_score 上海"})
    await start("d", "trip", who=root, initiator="max")
    await start("e", form={"days": 5})
    task_a = (await api.my_tasks(people.mia, instanceId=ids["a"]))[0]["id"]
    assert (await api.post(f"/tasks/{task_a}/approve", people.mia)).status_code == 200
    api.clock.advance(seconds=60)
    assert (await api.post(f"/instances/{ids['e']}/cancel", people.ops)).status_code == 200
    api.clock.advance(seconds=60)
    assert (await api.post(f"/instances/{ids['d']}/suspend", people.ops)).status_code == 200
    return World(ids, traces, t0)


async def test_default_order_and_definition_filters_O1(
    api: Api, people: People, world: World
) -> None:
    w = world
    assert await _ids(api, people.mon) == [w.e, w.d, w.c, w.b, w.a]
    assert await _ids(api, people.mon, definitionKey="leave") == [w.e, w.c, w.b, w.a]
    assert await _ids(api, people.mon, definitionKey="leave", definitionVersion=2) == [w.e, w.c]
    assert await _ids(api, people.mon, definitionKey="trip") == [w.d]


async def test_several_statuses_O1(api: Api, people: People, world: World) -> None:
    w = world
    assert await _ids(api, people.mon, status="running") == [w.c, w.b]
    both = [("status", "running"), ("status", "suspended")]
    response = await api.client.get("/api/workflows/instances", headers=people.mon, params=both)
    assert [i["id"] for i in response.json()["items"]] == [w.d, w.c, w.b]
    assert await _ids(api, people.mon, status="approved,canceled") == [w.e, w.a]
    bad = await api.get("/instances", people.mon, status="running,sleeping")
    assert bad.status_code == 422 and bad.json()["field"] == "query.status"


async def test_initiator_and_time_ranges_O1(api: Api, people: People, world: World) -> None:
    w = world
    assert await _ids(api, people.mon, initiator="max") == [w.d]
    minute = timedelta(seconds=60)
    window = {
        "startedFrom": (w.t0 + minute).isoformat(),
        "startedTo": (w.t0 + 3 * minute).isoformat(),
    }
    assert await _ids(api, people.mon, **window) == [w.c, w.b]
    created = {"createdFrom": (w.t0 + 4 * minute).isoformat()}
    assert await _ids(api, people.mon, **created) == [w.e]
    # a was approved at t0+5min, e canceled at t0+6min
    finished = {
        "finishedFrom": (w.t0 + 5 * minute).isoformat(),
        "finishedTo": (w.t0 + 6 * minute).isoformat(),
    }
    assert await _ids(api, people.mon, **finished) == [w.a]


async def test_a_time_that_does_not_exist_in_utc_is_a_422_A4(api: Api, people: People) -> None:
    """0001-01-01T00:00+01:00 is before the first representable UTC instant:
    a 422 naming the parameter, on both backends, never a 500."""
    for name in ("createdFrom", "startedTo", "finishedFrom"):
        bad = await api.get("/instances", people.mon, **{name: "0001-01-01T00:00:00+01:00"})
        assert bad.status_code == 422, bad.text
        assert bad.json()["field"] == f"query.{name}"
    late = await api.get("/instances", people.mon, startedFrom="9999-12-31T23:59:59-01:00")
    assert late.status_code == 422 and late.json()["field"] == "query.startedFrom"


async def test_current_node_and_assignee_O1(api: Api, people: People, world: World) -> None:
    w = world
    assert await _ids(api, people.mon, currentNode="manager") == [w.d, w.c, w.b]
    assert await _ids(api, people.mon, currentNode="end") == []
    assert await _ids(api, people.mon, currentAssignee="mia") == [w.b]
    assert await _ids(api, people.mon, currentAssignee="max") == [w.d, w.c]


async def test_has_error_from_the_instance_or_a_dead_job_O1(
    api: Api, people: People, world: World
) -> None:
    w = world
    async with api.db.begin() as conn:
        await conn.execute(
            update(workflow_instances)
            .where(workflow_instances.c.id == w.b)
            .values(error="trigger failed: HTTP 502")
        )
        job = await ledger_of(conn).job_insert(
            conn,
            JobSpec(type=TRIGGER_DISPATCH, tenant_id="default", instance_id=w.c),
            now=api.clock.now(),
        )
        await conn.execute(
            update(workflow_jobs).where(workflow_jobs.c.id == job.job_id).values(status="dead")
        )
    assert await _ids(api, people.mon, hasError="true") == [w.c, w.b]
    assert await _ids(api, people.mon, hasError="false") == [w.e, w.d, w.a]


async def test_stuck_minutes_means_running_without_progress_O1(
    api: Api, people: People, world: World
) -> None:
    w = world
    api.clock.advance(seconds=30 * 60)
    # b and c have not moved since they started; d is suspended, not stuck
    assert await _ids(api, people.mon, stuckMinutes=30) == [w.c, w.b]
    assert await _ids(api, people.mon, stuckMinutes=40) == []
    task_c = (await api.my_tasks(people.max, instanceId=w.c))[0]["id"]
    comment = await api.post(f"/tasks/{task_c}/transfer", people.max, {"to": "hal"})
    assert comment.status_code == 200, comment.text
    api.clock.advance(seconds=60)
    assert await _ids(api, people.mon, stuckMinutes=30) == [w.b]
    assert (await api.get("/instances", people.mon, stuckMinutes=0)).status_code == 422


async def test_parent_instance_O1(api: Api, people: People, world: World) -> None:
    w = world
    async with api.db.begin() as conn:
        await conn.execute(
            update(workflow_instances)
            .where(workflow_instances.c.id.in_([w.c, w.e]))
            .values(parent_instance_id=w.b)
        )
    assert await _ids(api, people.mon, parentInstanceId=w.b) == [w.e, w.c]


async def test_keyword_id_trace_and_form_text_O1(api: Api, people: People, world: World) -> None:
    w = world
    assert await _ids(api, people.mon, keyword=str(w.c)) == [w.c]
    assert await _ids(api, people.mon, keyword=w.traces["d"]) == [w.d]
    assert await _ids(api, people.mon, keyword="BEACH") == [w.a]
    assert await _ids(api, people.mon, keyword="上海") == [w.c]
    # % and _ are literal, not wildcards
    assert await _ids(api, people.mon, keyword="50%") == [w.b]
    assert await _ids(api, people.mon, keyword="%") == [w.b]
    assert await _ids(api, people.mon, keyword="under_score") == [w.c]
    assert await _ids(api, people.mon, keyword="unde___core") == []
    assert await _ids(api, people.mon, keyword="nothing like it") == []


async def test_sorts_and_keyset_paging_O1(api: Api, people: People, world: World) -> None:
    w = world
    # updated: d (suspended last), e (canceled), a (approved), then c, b untouched
    assert await _ids(api, people.mon, sort="updated") == [w.d, w.e, w.a, w.c, w.b]
    assert await _ids(api, people.mon, sort="finished") == [w.e, w.a]
    first = (await api.get("/instances", people.mon, sort="updated", limit=2)).json()
    assert [i["id"] for i in first["items"]] == [w.d, w.e]
    second = (
        await api.get("/instances", people.mon, sort="updated", limit=2, cursor=first["next"])
    ).json()
    assert [i["id"] for i in second["items"]] == [w.a, w.c]
    third = (
        await api.get("/instances", people.mon, sort="updated", limit=2, cursor=second["next"])
    ).json()
    assert [i["id"] for i in third["items"]] == [w.b] and third["next"] is None
    assert (await api.get("/instances", people.mon, sort="name")).status_code == 422


async def test_counts_per_status_for_the_filter_O1(api: Api, people: People, world: World) -> None:
    response = await api.get("/instances/counts", people.mon)
    assert response.status_code == 200, response.text
    body = response.json()
    assert body["counts"] == {
        "running": 2,
        "suspended": 1,
        "approved": 1,
        "rejected": 0,
        "withdrawn": 0,
        "canceled": 1,
    }
    assert body["total"] == 5
    leave = (await api.get("/instances/counts", people.mon, definitionKey="leave")).json()
    assert leave["counts"]["running"] == 2 and leave["counts"]["suspended"] == 0
    assert leave["total"] == 4
    # the status filter itself is not applied: the badges of every tab stay
    tabs = (await api.get("/instances/counts", people.mon, status="running")).json()
    assert tabs == body
    mia = (await api.get("/instances/counts", people.mon, currentAssignee="mia")).json()
    assert mia["total"] == 1 and mia["counts"]["running"] == 1


async def test_other_tenants_are_invisible_A3(api: Api, people: People, world: World) -> None:
    other = await api.token("olga", "workflow:instance:monitor", tenants=("other",))
    assert await _ids(api, other) == []
    counts = (await api.get("/instances/counts", other)).json()
    assert counts["total"] == 0
    assert await _ids(api, other, keyword=str(world.b)) == []


async def test_task_act_callers_still_see_their_own_O1(
    api: Api, people: People, world: World
) -> None:
    w = world
    assert await _ids(api, people.ann, status="running") == [w.c, w.b]
    refused = await api.get("/instances", people.ann, initiator="max")
    assert refused.status_code == 403
    assert (await api.get("/instances/counts", people.ann)).status_code == 403
