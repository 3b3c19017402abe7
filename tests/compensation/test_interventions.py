"""Interventions of the compensation ticket actions (issue 31 item 2, SPEC
C-9), both backends: resume, retry, release and terminate each leave exactly
one intervention on the ticket's instance — actor, reason, the ticket's
status (or its action's job) before → after — in the trace, the
``kind=intervention`` filter and the diagnostic bundle; a refused action and
a note leave none."""

from __future__ import annotations

from typing import Any

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.engine import Engine
from tests.api.conftest import Api, People
from tests.api.test_interventions import changes, only_intervention, trace
from tests.compensation.flows import deploy, failed_instance, repair_at
from tests.integration.engine_helpers import jobs, run_due_jobs, tasks

EMAIL = {"type": "email", "recipients": ["ops@example.com"], "maxRetries": 0}


async def _pending(
    engine: Engine, db: Database, clock: ManualClock, *, action: dict[str, Any] | None = None
) -> tuple[int, int]:
    await deploy(engine)
    iid = await failed_instance(engine, db, clock)
    ticket_id = await repair_at(engine, iid, action=action, enqueue=action is not None)
    assert ticket_id is not None
    return iid, ticket_id


async def _none(api: Api, people: People, iid: int) -> None:
    assert (await trace(api, people, iid, kind="intervention"))["items"] == []


async def test_resume(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    iid, ticket_id = await _pending(engine, db, clock)
    note = await api.post(f"/compensation/{ticket_id}/note", people.ops, {"message": "looking"})
    assert note.status_code in (200, 201), note.text
    await _none(api, people, iid)
    (alice, _bob) = await tasks(db, iid, kind="catch")
    response = await api.post(f"/compensation/{ticket_id}/resume", people.ops, {"reason": "fixed"})
    assert response.status_code == 200, response.text
    row = await only_intervention(api, people, iid)
    assert (row["action"], row["actor"], row["reason"]) == ("compensation_resume", "ops", "fixed")
    assert changes(row) == [
        (f"ticket.{ticket_id}.status", "pending", "resolved"),
        (f"task.{alice['id']}.status", "pending", "completed"),
    ]
    again = await api.post(f"/compensation/{ticket_id}/resume", people.ops)
    assert again.status_code == 409
    assert (await trace(api, people, iid, kind="intervention"))["total"] == 1


async def test_retry(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    iid, ticket_id = await _pending(engine, db, clock, action=EMAIL)
    refused = await api.post(f"/compensation/{ticket_id}/retry", people.ops)
    assert refused.status_code == 409
    await _none(api, people, iid)
    await run_due_jobs(db, clock)  # no SMTP server: the only attempt fails
    [old] = await jobs(db, iid, type="compensation_action")
    response = await api.post(f"/compensation/{ticket_id}/retry", people.ops, {"reason": "again"})
    assert response.status_code == 200, response.text
    new = response.json()["actionJobId"]
    row = await only_intervention(api, people, iid)
    assert (row["action"], row["actor"], row["reason"]) == ("compensation_retry", "ops", "again")
    assert row["jobId"] == new
    assert changes(row) == [
        (f"ticket.{ticket_id}.actionJob", old["id"], new),
        (f"job.{new}.status", None, "pending"),
    ]


async def test_release(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    iid, ticket_id = await _pending(engine, db, clock)
    body = {"action": "resolve", "reason": "done by hand"}
    response = await api.post(f"/compensation/{ticket_id}/resolve", people.ops, body)
    assert response.status_code == 200, response.text
    row = await only_intervention(api, people, iid)
    assert (row["action"], row["actor"], row["reason"]) == (
        "compensation_release",
        "ops",
        "done by hand",
    )
    assert changes(row) == [(f"ticket.{ticket_id}.status", "pending", "resolved")]
    again = await api.post(f"/compensation/{ticket_id}/resolve", people.ops, body)
    assert again.status_code == 409
    assert (await trace(api, people, iid, kind="intervention"))["total"] == 1


async def test_terminate(
    api: Api, people: People, engine: Engine, db: Database, clock: ManualClock
) -> None:
    iid, ticket_id = await _pending(engine, db, clock)
    body = {"action": "terminate", "reason": "vendor gone"}
    response = await api.post(f"/compensation/{ticket_id}/resolve", people.ops, body)
    assert response.status_code == 200, response.text
    row = await only_intervention(api, people, iid)
    assert (row["action"], row["actor"], row["reason"]) == (
        "compensation_terminate",
        "ops",
        "vendor gone",
    )
    assert changes(row) == [
        (f"ticket.{ticket_id}.status", "pending", "terminated"),
        ("status", "running", "rejected"),
    ]
