"""The event-dispatch view of the diagnostics (SPEC O-10, E-10, X-5), both
backends, through the real relay and handlers: each outbox row of the
instance with the ``event_dispatch`` job that took it, its subscription hits
and their webhook deliveries (refused by the SSRF guard here, so each
delivery shows its status and error); a failed row shows its error."""

from __future__ import annotations

import pytest
from sqlalchemy import update

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox, workflow_trace
from flowledger.db.schema import workflow_jobs
from flowledger.ops.diagnostics.jobs import events_view
from tests.events.webhook_support import deployed_engine, dispatch_all, relay, subscribe
from tests.events.webhook_support import secret_key as secret_key

URL = "http://192.0.2.10/in"  # refused by the SSRF guard: deliveries never connect


@pytest.mark.usefixtures("secret_key")
async def test_events_with_dispatch_job_hits_and_deliveries(
    db: Database, clock: ManualClock
) -> None:
    engine = await deployed_engine(db, clock)
    subscription, _ = await subscribe(db, clock, URL, event_types=("task.created",))
    iid = await engine.start("leave", form={}, initiator="ann")
    other = await engine.start("expense", form={}, initiator="ann")
    clock.advance(seconds=5)
    await dispatch_all(db, clock)
    async with db.read() as conn:
        view = await events_view(conn, iid)
        dispatch_jobs = (
            await conn.execute(
                workflow_jobs.select().where(workflow_jobs.c.type == "event_dispatch")
            )
        ).all()
    assert view["total"] == len(view["items"]) >= 2
    assert {e["status"] for e in view["items"]} == {"dispatched"}
    assert all(e["dispatchJob"]["id"] in {j.id for j in dispatch_jobs} for e in view["items"])
    created = [e for e in view["items"] if e["eventType"] == "task.created"]
    assert len(created) == 1
    (hit,) = created[0]["hits"]
    assert hit["subscriptionId"] == subscription
    assert hit["delivery"] is not None and hit["delivery"]["status"] in ("dead", "failed")
    assert hit["lastError"] or hit["delivery"]["lastError"]
    assert all(not e["hits"] for e in view["items"] if e["eventType"] != "task.created")
    assert all(e["payload"]["instanceId"] == iid for e in view["items"])
    assert other != iid


async def test_pending_and_failed_rows(db: Database, clock: ManualClock) -> None:
    engine = await deployed_engine(db, clock)
    iid = await engine.start("leave", form={}, initiator="ann")
    async with db.read() as conn:
        view = await events_view(conn, iid)
    assert {e["status"] for e in view["items"]} == {"pending"}
    assert all(e["dispatchJob"] is None for e in view["items"])  # no relay ran yet
    job_id = await relay(db, clock)
    assert job_id is not None
    async with db.read() as conn:
        view = await events_view(conn, iid)
    assert {e["dispatchJob"]["id"] for e in view["items"]} == {job_id}
    assert {e["dispatchJob"]["status"] for e in view["items"]} == {"pending"}
    first = view["items"][0]["id"]
    async with db.begin() as conn:
        await conn.execute(
            update(workflow_event_outbox)
            .where(workflow_event_outbox.c.id == first)
            .values(status="failed", dispatched_at=clock.now())
        )
        await conn.execute(
            workflow_trace.insert().values(
                instance_id=iid,
                trace_id="t",
                event="event_dispatch_failed",
                detail={"eventId": first, "error": "ValueError: poison"},
                created_at=clock.now(),
            )
        )
    async with db.read() as conn:
        view = await events_view(conn, iid)
    failed = [e for e in view["items"] if e["status"] == "failed"]
    assert [(e["id"], e["error"]) for e in failed] == [(first, "ValueError: poison")]
