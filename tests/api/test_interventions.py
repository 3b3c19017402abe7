"""Interventions in the timeline (issue 31 item 2) over HTTP, both backends:
each operator action on a real instance — force jump, reassign, remind, form
correction, job retry and skip, batch recovery, targeted recovery, suspend
and resume — leaves exactly one intervention with its actor, reason and
changes before → after, in the drawer's engine trace (``kind``), alone with
``kind=intervention`` and in the diagnostic bundle; a refused action leaves
none; a secret form field's values are redacted. The compensation ticket
actions are in tests/compensation/test_interventions.py."""

from __future__ import annotations

import json
from typing import Any

from sqlalchemy import select

from flowledger.db.engine_schema import workflow_tasks
from flowledger.db.schema import workflow_jobs
from flowledger.engine.interventions import ACTIONS, MIGRATION
from tests.api.conftest import BASE, Api, People, approval

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

SECRET_FORM = {
    **approval("keys"),
    "form": {
        "fields": [
            {"key": "days", "type": "integer", "required": True},
            {"key": "apiKey", "type": "string"},
        ]
    },
}


async def trace(api: Api, people: People, iid: int, **params: Any) -> dict[str, Any]:
    response = await api.get(
        f"/instances/{iid}/diagnostics", people.mon, view="trace", limit=1000, **params
    )
    assert response.status_code == 200, response.text
    return dict(response.json()["trace"])


async def only_intervention(api: Api, people: People, iid: int) -> dict[str, Any]:
    """The instance's one intervention, checked the same in the trace, in the
    filtered trace and in the bundle."""
    full = await trace(api, people, iid)
    kinds = {row["kind"] for row in full["items"]}
    assert kinds <= {"engine", "intervention"}
    mixed = [row for row in full["items"] if row["kind"] == "intervention"]
    assert len(mixed) == 1, mixed
    assert all(row["event"] != "intervention" for row in full["items"] if row["kind"] == "engine")
    filtered = await trace(api, people, iid, kind="intervention")
    assert filtered["items"] == mixed and filtered["total"] == 1
    bundle = await api.get(f"/instances/{iid}/diagnostic-bundle", people.mon)
    assert bundle.status_code == 200, bundle.text
    assert bundle.json()["interventions"] == mixed
    (row,) = mixed
    assert row["detail"] == {
        "action": row["action"],
        "actor": row["actor"],
        "reason": row["reason"],
        "changes": row["changes"],
    }
    return dict(row)


def changes(row: dict[str, Any]) -> list[tuple[str, Any, Any]]:
    return [(c["field"], c["before"], c["after"]) for c in row["changes"]]


async def _tasks(api: Api, iid: int) -> list[dict[str, Any]]:
    async with api.db.read() as conn:
        rows = await conn.execute(
            select(workflow_tasks)
            .where(workflow_tasks.c.instance_id == iid)
            .order_by(workflow_tasks.c.id)
        )
        return [dict(r) for r in rows.mappings()]


async def _wake_job(api: Api, iid: int) -> int:
    async with api.db.read() as conn:
        return int(
            (
                await conn.execute(
                    select(workflow_jobs.c.id).where(
                        workflow_jobs.c.instance_id == iid, workflow_jobs.c.type == "delay_wake"
                    )
                )
            ).scalar_one()
        )


def test_the_vocabulary_names_the_migration_hook() -> None:
    assert MIGRATION == "migration" and MIGRATION in ACTIONS
    assert len(set(ACTIONS)) == len(ACTIONS)


async def test_force_jump_is_one_intervention_and_a_refused_one_is_none(
    api: Api, people: People
) -> None:
    await api.deploy(people.root, approval("two", ["mia", "max"]))
    iid = (await api.start(people.ann, "two"))["id"]
    tasks = await _tasks(api, iid)
    bad = await api.post(
        f"/instances/{iid}/force-jump", people.ops, {"target": "nowhere", "reason": "x"}
    )
    assert bad.status_code == 422 and bad.json()["code"] == "node_unknown"
    preview = await api.get(f"/instances/{iid}/force-jump/preview", people.mon, target="end")
    assert preview.status_code == 200
    assert (await trace(api, people, iid, kind="intervention"))["items"] == []
    done = await api.post(
        f"/instances/{iid}/force-jump", people.ops, {"target": "end", "reason": "signed on paper"}
    )
    assert done.status_code == 200, done.text
    row = await only_intervention(api, people, iid)
    assert (row["action"], row["actor"], row["reason"]) == ("force_jump", "ops", "signed on paper")
    assert row["nodeKey"] == "end"
    assert changes(row) == [
        ("node", "manager", "end"),
        *((f"task.{t['id']}.status", "pending", "skipped") for t in tasks),
    ]
    # the instance ended: a second jump is refused and writes nothing
    again = await api.post(
        f"/instances/{iid}/force-jump", people.ops, {"target": "manager", "reason": "x"}
    )
    assert again.status_code == 409
    assert (await trace(api, people, iid, kind="intervention"))["total"] == 1


async def test_reassign_and_remind(api: Api, people: People) -> None:
    await api.deploy(people.root, approval())
    iid = (await api.start(people.ann, "leave", form={"days": 2}))["id"]
    (task,) = await _tasks(api, iid)
    conflict = await api.post(
        f"/tasks/{task['id']}/reassign", people.ops, {"to": "mia", "reason": "same"}
    )
    assert conflict.status_code == 409
    assert (await trace(api, people, iid, kind="intervention"))["items"] == []
    moved = await api.post(
        f"/tasks/{task['id']}/reassign", people.ops, {"to": "max", "reason": "mia is away"}
    )
    assert moved.status_code == 200, moved.text
    row = await only_intervention(api, people, iid)
    assert (row["action"], row["actor"], row["reason"]) == ("reassign", "ops", "mia is away")
    assert (row["taskId"], row["nodeKey"]) == (task["id"], "manager")
    assert changes(row) == [("assignee", "mia", "max")]

    await api.deploy(people.root, approval("nudge"))
    iid = (await api.start(people.ann, "nudge", form={"days": 1}))["id"]
    (task,) = await _tasks(api, iid)
    first = await api.post(f"/tasks/{task['id']}/remind", people.ops, {"note": "payroll closes"})
    assert first.status_code == 200, first.text
    too_soon = await api.post(f"/tasks/{task['id']}/remind", people.ops)
    assert too_soon.status_code == 429  # refused: no second intervention
    row = await only_intervention(api, people, iid)
    assert (row["action"], row["actor"], row["reason"]) == ("remind", "ops", "payroll closes")
    assert changes(row) == [("reminders", 0, 1)]


async def test_form_correction_redacts_secret_fields(api: Api, people: People) -> None:
    await api.deploy(people.root, SECRET_FORM)
    iid = (await api.start(people.ann, "keys", form={"days": 2, "apiKey": "old-key"}))["id"]
    url = f"{BASE}/instances/{iid}/form"
    invalid = await api.client.patch(
        url, headers=people.ops, json={"changes": {"days": "many"}, "reason": "typo"}
    )
    assert invalid.status_code == 422
    assert (await trace(api, people, iid, kind="intervention"))["items"] == []
    fixed = await api.client.patch(
        url,
        headers=people.ops,
        json={"changes": {"days": 5, "apiKey": "new-key"}, "reason": "HR confirmed"},
    )
    assert fixed.status_code == 200, fixed.text
    row = await only_intervention(api, people, iid)
    assert (row["action"], row["actor"], row["reason"]) == (
        "form_correction",
        "ops",
        "HR confirmed",
    )
    assert changes(row) == [
        ("form.apiKey", "[redacted]", "[redacted]"),
        ("form.days", 2, 5),
    ]
    bundle = (await api.get(f"/instances/{iid}/diagnostic-bundle", people.mon)).json()
    shown = json.dumps(bundle["interventions"])
    assert "new-key" not in shown and "old-key" not in shown


async def test_job_skip_then_retry(api: Api, people: People) -> None:
    await api.deploy(people.root, DELAY)
    iid = (await api.start(people.root, "nap", form={}))["id"]
    job_id = await _wake_job(api, iid)
    skipped = await api.post(f"/engine/jobs/{job_id}/skip", people.ops, {"reason": "not needed"})
    assert skipped.status_code == 200, skipped.text
    row = await only_intervention(api, people, iid)
    assert (row["action"], row["actor"], row["reason"]) == ("job_skip", "ops", "not needed")
    assert (row["jobId"], changes(row)) == (
        job_id,
        [(f"job.{job_id}.status", "pending", "canceled")],
    )
    refused = await api.post(f"/engine/jobs/{job_id}/skip", people.ops)
    assert refused.status_code == 409
    retried = await api.post(
        f"/engine/jobs/{job_id}/retry", people.ops, {"reason": "needed after all"}
    )
    assert retried.status_code == 200, retried.text
    rows = (await trace(api, people, iid, kind="intervention"))["items"]
    assert [(r["action"], r["reason"]) for r in rows] == [
        ("job_skip", "not needed"),
        ("job_retry", "needed after all"),
    ]
    assert changes(rows[1]) == [(f"job.{job_id}.status", "canceled", "pending")]
    assert rows[0]["id"] < rows[1]["id"]  # in time order
    batch = await api.post(
        "/engine/jobs/batch-skip", people.ops, {"ids": [job_id], "reason": "batch"}
    )
    assert batch.status_code == 200, batch.text
    rows = (await trace(api, people, iid, kind="intervention"))["items"]
    assert (rows[-1]["action"], rows[-1]["reason"], changes(rows[-1])) == (
        "job_skip",
        "batch",
        [(f"job.{job_id}.status", "pending", "canceled")],
    )
    assert len(rows) == 3


async def test_targeted_recovery(api: Api, people: People) -> None:
    await api.deploy(people.root, DELAY)
    iid = (await api.start(people.root, "nap", form={}))["id"]
    job_id = await _wake_job(api, iid)
    async with api.db.begin() as conn:
        await conn.execute(
            workflow_jobs.update().where(workflow_jobs.c.id == job_id).values(status="dead")
        )
    run = await api.post(
        "/engine/recovery/delay-wake/run",
        people.ops,
        {"instanceId": iid, "reason": "wake jobs died in the outage"},
    )
    assert run.status_code == 200, run.text
    assert run.json()["totals"]["done"] == 1
    row = await only_intervention(api, people, iid)
    assert (row["action"], row["actor"], row["reason"]) == (
        "targeted_recovery",
        "ops",
        "wake jobs died in the outage",
    )
    assert changes(row) == [(f"job.{job_id}.status", "dead", "pending")]


async def test_batch_recovery_and_a_reminder_is_no_progress(api: Api, people: People) -> None:
    await api.deploy(people.root, approval("stuck"))
    iid = (await api.start(people.ann, "stuck", form={"days": 1}))["id"]
    (task,) = await _tasks(api, iid)
    api.clock.advance(seconds=31 * 60)
    # a reminder now: the instance is still stuck (an intervention is no engine progress)
    reminded = await api.post(f"/tasks/{task['id']}/remind", people.ops, {"note": "please"})
    assert reminded.status_code == 200, reminded.text
    body = {
        "definitionKey": "stuck",
        "nodeKey": "manager",
        "stuckMinutes": 30,
        "instanceIds": [iid],
        "reason": "desk closed",
    }
    listed = await api.get("/instances", people.ops, stuckMinutes=30, definitionKey="stuck")
    assert [i["id"] for i in listed.json()["items"]] == [iid], listed.text
    dry = await api.post("/instances/batch-recover", people.ops, {**body, "dryRun": True})
    assert dry.status_code == 200, dry.text
    assert [r["action"] for r in (await trace(api, people, iid, kind="intervention"))["items"]] == [
        "remind"
    ]
    done = await api.post("/instances/batch-recover", people.ops, body)
    assert done.json()["totals"]["advanced"] == 1, done.text
    rows = (await trace(api, people, iid, kind="intervention"))["items"]
    assert [r["action"] for r in rows] == ["remind", "batch_recovery"]
    row = rows[1]
    assert (row["actor"], row["reason"]) == ("ops", "desk closed")
    assert changes(row) == [
        ("node", "manager", "end"),
        (f"task.{task['id']}.status", "pending", "skipped"),
    ]
    bundle = (await api.get(f"/instances/{iid}/diagnostic-bundle", people.mon)).json()
    assert bundle["interventions"] == rows


async def test_suspend_resume_and_the_filter(api: Api, people: People) -> None:
    await api.deploy(people.root, DELAY)
    iid = (await api.start(people.root, "nap", form={}))["id"]
    job_id = await _wake_job(api, iid)
    down = await api.post(f"/instances/{iid}/suspend", people.ops, {"reason": "audit"})
    assert down.status_code == 200, down.text
    assert (await api.post(f"/instances/{iid}/suspend", people.ops)).status_code == 409
    row = await only_intervention(api, people, iid)
    assert (row["action"], row["actor"], row["reason"]) == ("suspend", "ops", "audit")
    assert changes(row) == [("status", "running", "suspended"), ("pausedJobs", [], [job_id])]
    up = await api.post(f"/instances/{iid}/resume", people.ops, {"reason": "audit done"})
    assert up.status_code == 200, up.text
    full = await trace(api, people, iid)
    only = await trace(api, people, iid, kind="intervention")
    engine_rows = await trace(api, people, iid, kind="engine")
    assert [r["action"] for r in only["items"]] == ["suspend", "resume"]
    assert all(r["kind"] == "intervention" for r in only["items"])
    assert all(r["kind"] == "engine" for r in engine_rows["items"])
    assert only["total"] + engine_rows["total"] == full["total"]
    assert [r["id"] for r in full["items"]] == sorted(
        r["id"] for r in only["items"] + engine_rows["items"]
    )
    resume = only["items"][1]
    assert resume["reason"] == "audit done"
    assert changes(resume) == [
        ("status", "suspended", "running"),
        (f"job.{job_id}.status", "paused", "pending"),
    ]
    # paged like the rest of the trace
    first = await api.get(
        f"/instances/{iid}/diagnostics", people.mon, view="trace", kind="intervention", limit=1
    )
    page = first.json()["trace"]
    assert [r["action"] for r in page["items"]] == ["suspend"] and page["next"]
    second = await api.get(
        f"/instances/{iid}/diagnostics",
        people.mon,
        view="trace",
        kind="intervention",
        limit=1,
        cursor=page["next"],
    )
    assert [r["action"] for r in second.json()["trace"]["items"]] == ["resume"]
    bad = await api.get(f"/instances/{iid}/diagnostics", people.mon, view="trace", kind="people")
    assert bad.status_code == 422
    assert "kind" in bad.text
