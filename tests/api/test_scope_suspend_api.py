"""Pause by scope and suspend by definition over HTTP (issue 31 item 3),
both backends: a pool / job type is paused with a reason (who, why, since in
the list, the runtime status and the engine diagnostics), resumed, and
audited; bad input is 422 naming the field (missing or blank reason, unknown
pool or job type, both or neither scope); a definition's dry run counts
exactly what the run suspends, honours the node filter, reports already
suspended and ended instances as skipped; resume likewise."""

from __future__ import annotations

from typing import Any

import pytest

from flowledger.db.engine_schema import operation_audit
from flowledger.engine.job_types import DELAY_WAKE
from flowledger.states import Pool
from tests.api.conftest import Api, People

LEDGER, OUTBOUND = Pool.LEDGER.value, Pool.OUTBOUND.value

TWO_STEPS = {
    "key": "twostep",
    "name": "two steps",
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "first", "type": "approval", "assignees": {"users": ["mia"]}},
        {"key": "second", "type": "approval", "assignees": {"users": ["max"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [
        {"from": "start", "to": "first"},
        {"from": "first", "to": "second"},
        {"from": "second", "to": "end"},
    ],
}


async def _audit(api: Api, action: str) -> list[dict[str, Any]]:
    return [r for r in await api.rows(operation_audit) if r["action"] == action]


async def test_pause_list_status_diagnostics_resume_and_audit(api: Api, people: People) -> None:
    paused = await api.post(
        "/engine/job-pauses", people.ops, {"pool": OUTBOUND, "reason": "vendor outage"}
    )
    assert paused.status_code == 201, paused.text
    body = paused.json()
    assert (body["scope"], body["value"], body["pausedBy"], body["reason"]) == (
        "pool",
        OUTBOUND,
        "ops",
        "vendor outage",
    )
    typed = await api.post(
        "/engine/job-pauses", people.ops, {"jobType": DELAY_WAKE.name, "reason": "hold timers"}
    )
    assert typed.status_code == 201, typed.text
    listed = (await api.get("/engine/job-pauses", people.mon)).json()["items"]
    assert [(p["scope"], p["value"]) for p in listed] == [
        ("pool", OUTBOUND),
        ("job_type", DELAY_WAKE.name),
    ]
    status = (await api.get("/engine/jobs/runtime-status", people.mon)).json()
    assert [(p["value"], p["pausedBy"], p["reason"]) for p in status["pausedScopes"]] == [
        (OUTBOUND, "ops", "vendor outage"),
        (DELAY_WAKE.name, "ops", "hold timers"),
    ]
    assert all(p["since"] for p in status["pausedScopes"])
    diag = (await api.get("/engine/diagnostics", people.mon)).json()
    assert [p["value"] for p in diag["pausedScopes"]] == [OUTBOUND, DELAY_WAKE.name]
    again = await api.post("/engine/job-pauses", people.ops, {"pool": OUTBOUND, "reason": "x"})
    assert again.status_code == 409 and again.json()["code"] == "already_paused"

    resumed = await api.post("/engine/job-pauses/resume", people.ops, {"pool": OUTBOUND})
    assert resumed.status_code == 200, resumed.text
    assert resumed.json()["reason"] == "vendor outage"
    listed = (await api.get("/engine/job-pauses", people.mon)).json()["items"]
    assert [p["value"] for p in listed] == [DELAY_WAKE.name]
    missing = await api.post("/engine/job-pauses/resume", people.ops, {"pool": OUTBOUND})
    assert missing.status_code == 404 and missing.json()["code"] == "not_paused"

    (pause_row, _, refused) = [
        r for r in await api.rows(operation_audit) if r["action"].startswith("job_scope.")
    ][:3]
    assert (pause_row["action"], pause_row["target_type"], pause_row["target_id"]) == (
        "job_scope.pause",
        "pool",
        OUTBOUND,
    )
    assert (pause_row["actor"], pause_row["reason"], pause_row["result"]) == (
        "ops",
        "vendor outage",
        "ok",
    )
    assert refused["result"] == "failed" and refused["detail"]["code"] == "already_paused"
    (resume_row,) = [r for r in await _audit(api, "job_scope.resume") if r["result"] == "ok"]
    assert resume_row["detail"]["pausedBy"] == "ops"
    # a monitor may read but not pause
    denied = await api.post("/engine/job-pauses", people.mon, {"pool": LEDGER, "reason": "r"})
    assert denied.status_code == 403


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"pool": LEDGER}, "body.reason"),
        ({"pool": LEDGER, "reason": "   "}, "body.reason"),
        ({"pool": "no-such-pool", "reason": "r"}, "pool"),
        ({"jobType": "no_such_type", "reason": "r"}, "jobType"),
        ({"pool": LEDGER, "jobType": DELAY_WAKE.name, "reason": "r"}, "body"),
        ({"reason": "r"}, "body"),
    ],
)
async def test_bad_pause_input_is_422_naming_the_field(
    api: Api, people: People, body: dict[str, Any], field: str
) -> None:
    response = await api.post("/engine/job-pauses", people.ops, body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
    if field in ("pool", "jobType"):
        assert response.json()["code"] == f"unknown_{'pool' if field == 'pool' else 'job_type'}"
    assert (await api.get("/engine/job-pauses", people.mon)).json()["items"] == []


async def _world(api: Api, people: People) -> dict[str, list[int]]:
    """6 instances of ``twostep``: 3 at first, 1 moved to second, 1 already
    suspended (at first), 1 canceled."""
    await api.deploy(people.dev, TWO_STEPS)
    ids = [int((await api.start(people.root, "twostep", form={}))["id"]) for _ in range(6)]
    moved = await api.post(
        f"/instances/{ids[3]}/force-jump", people.ops, {"target": "second", "reason": "move"}
    )
    assert moved.status_code == 200, moved.text
    assert (await api.post(f"/instances/{ids[4]}/suspend", people.ops)).status_code == 200
    assert (await api.post(f"/instances/{ids[5]}/cancel", people.ops)).status_code == 200
    return {"first": ids[:3], "second": [ids[3]], "suspended": [ids[4]], "ended": [ids[5]]}


async def _statuses(api: Api, people: People, ids: list[int]) -> list[str]:
    return [(await api.get(f"/instances/{i}", people.root)).json()["status"] for i in ids]


async def test_definition_dry_run_counts_what_the_run_suspends(api: Api, people: People) -> None:
    world = await _world(api, people)
    scope = {"definitionKey": "twostep", "nodeKey": "first"}
    dry = await api.post("/instances/scope-preview", people.mon, scope)
    assert dry.status_code == 200, dry.text
    preview = dry.json()
    assert (preview["count"], preview["sample"], preview["dryRun"]) == (
        3,
        world["first"],
        True,
    )
    # at the node: the suspended one still holds its token there, the canceled one none
    assert preview["skippedByStatus"] == {"suspended": 1}
    whole = await api.post("/instances/scope-preview", people.mon, {"definitionKey": "twostep"})
    assert whole.json()["count"] == 4
    assert whole.json()["skippedByStatus"] == {"suspended": 1, "canceled": 1}
    # the dry run changed nothing
    assert await _statuses(api, people, world["first"]) == ["running"] * 3

    run = await api.post("/instances/scope-suspend", people.ops, {**scope, "reason": "audit"})
    assert run.status_code == 200, run.text
    result = run.json()
    assert result["totals"] == {
        "selected": 3,
        "suspended": 3,
        "resumed": 0,
        "skipped": 0,
        "failed": 0,
    }
    assert [r["instanceId"] for r in result["results"]] == world["first"]
    assert result["skippedByStatus"] == {"suspended": 1}
    assert await _statuses(api, people, world["first"]) == ["suspended"] * 3
    assert await _statuses(api, people, world["second"]) == ["running"]  # node filter
    (batch,) = await _audit(api, "definition.suspend_all")
    assert (batch["target_id"], batch["reason"], batch["detail"]["totals"]["suspended"]) == (
        "twostep",
        "audit",
        3,
    )
    per_instance = [int(r["target_id"]) for r in await _audit(api, "instance.suspend")]
    assert sorted(set(per_instance) - set(world["suspended"])) == world["first"]

    # explicit ids: one that does not qualify is reported skipped with the reason
    explicit = await api.post(
        "/instances/scope-suspend",
        people.ops,
        {
            "definitionKey": "twostep",
            "instanceIds": [world["second"][0], world["ended"][0], 999_999],
            "reason": "r",
        },
    )
    items = {r["instanceId"]: r for r in explicit.json()["results"]}
    assert items[world["second"][0]]["outcome"] == "suspended"
    assert items[world["ended"][0]] == {
        **items[world["ended"][0]],
        "outcome": "skipped",
        "reason": "instance is canceled",
    }
    assert items[999_999]["reason"] == "instance not found"

    # resume: the dry run counts the suspended ones, the run resumes them
    resume_scope = {"definitionKey": "twostep", "nodeKey": "first"}
    dry = (
        await api.post("/instances/scope-preview", people.mon, {**resume_scope, "action": "resume"})
    ).json()
    assert dry["count"] == 4  # the 3 suspended by the batch and the one suspended before
    run = (await api.post("/instances/scope-resume", people.ops, resume_scope)).json()
    assert run["totals"]["resumed"] == 4 and run["totals"]["failed"] == 0
    assert await _statuses(api, people, world["first"] + world["suspended"]) == ["running"] * 4
    assert len(await _audit(api, "definition.resume_all")) == 1


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/instances/scope-suspend", {"definitionKey": "twostep"}, "body.reason"),
        ("/instances/scope-suspend", {"definitionKey": "twostep", "reason": " "}, "body.reason"),
        ("/instances/scope-suspend", {"reason": "r"}, "body.definitionKey"),
        ("/instances/scope-preview", {"definitionKey": "k", "action": "stop"}, "body.action"),
    ],
)
async def test_bad_scope_input_is_422_naming_the_field(
    api: Api, people: People, path: str, body: dict[str, Any], field: str
) -> None:
    response = await api.post(path, people.ops, body)
    assert response.status_code == 422, response.text
    assert response.json()["field"] == field
