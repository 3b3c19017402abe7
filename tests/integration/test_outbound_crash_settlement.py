"""A worker killed after an outbound node's success step committed but before
its settlement (SPEC L-14, L-17, L-20, X-1, X-2, C-7), on both backends
against a real receiver on 127.0.0.1.

The job's handler runs for real (claim → call → fenced step receipt), the
executor's outcome is thrown away (the "crash"), the lease expires and the
drain (``jobs_rescue``) puts the job back to pending — the receipt cleared the
side-effect marker, so it is no L-17 dead letter. The re-run finds the success
receipt (keyed by the operation only) and settles ``succeeded`` with the
recorded result without calling again: exactly one request at the receiver,
the instance advanced once, and a later Saga rollback sees a succeeded job.
Covered for a sync trigger, an async trigger and an external dispatch.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox
from flowledger.db.schema import workflow_job_effects
from flowledger.engine import Engine
from flowledger.ledger.models import OutcomeKind
from flowledger.settings import Settings
from flowledger.states import Pool
from flowledger.worker.context import JobContext
from flowledger.worker.executor import execute
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    jobs,
    new_engine,
    run_due_jobs,
    tasks,
    tokens,
    trace_events,
)
from tests.integration.ledger_helpers import attempt_rows, rescue
from tests.ledger_access import ledger_of
from tests.outbound import conftest as outbound_fixtures
from tests.outbound.receivers import Receiver
from tests.runtime_support import handler_for

receiver = outbound_fixtures.receiver
other_receiver = outbound_fixtures.other_receiver
outbound_env = outbound_fixtures.outbound_env

FORM: list[dict[str, Any]] = [
    {"key": "orderId", "type": "string", "required": True},
    {"key": "erpId", "type": "string"},
]


async def deploy_trigger(engine: Engine, url: str, **call: Any) -> int:
    spec = {
        "kind": "http",
        "url": f"{url}/orders",
        "httpMethod": "POST",  # an unsafe write: the side-effect marker is set
        "bodyTemplate": '{"order": "{{form.orderId}}"}',
        "resultMapping": {"erpId": "response.body.id"},
        **call,
    }
    nodes = [START, {"key": "erp", "type": "trigger", "call": spec}, approval("after", "alice")]
    edges: list[Any] = [("start", "erp"), ("erp", "after"), ("after", "end")]
    await engine.deploy(definition("erp", [*nodes, END], edges, FORM), actor="admin")
    return await engine.start("erp", form={"orderId": "A1"}, initiator="u")


async def deploy_external(engine: Engine, url: str) -> int:
    dispatch = {"kind": "http", "url": f"{url}/approvals", "bodyTemplate": '{"n": 1}'}
    nodes = [START, {"key": "partner", "type": "external_approval", "dispatch": dispatch}, END]
    edges: list[Any] = [("start", "partner"), ("partner", "end")]
    await engine.deploy(definition("ext", nodes, edges, FORM), actor="admin")
    return await engine.start("ext", form={"orderId": "A1"}, initiator="u")


async def crash_after_the_step(db: Database, clock: ManualClock, job_type: str) -> int:
    """Claim and run the job through its real handler, lose the outcome (the
    worker is killed before settling), let the lease expire and drain."""
    (job,) = await ledger_of(db).jobs_claim(
        db, pool=Pool.OUTBOUND, limit=10, node_id="doomed", now=clock.now()
    )
    assert job.type == job_type
    outcome = await execute(
        JobContext(job, db, clock), handler_for(db, clock, job.type), abort_grace_s=1.0
    )
    assert outcome is not None and outcome.kind is OutcomeKind.SUCCESS  # never settled
    clock.advance(seconds=61)  # past the 60 s lease
    report = await rescue(db, clock.now())
    # the step's receipt cleared the side-effect marker: retried, not L-17 dead
    assert (report.retried, report.dead) == ([job.id], [])
    clock.advance(seconds=30)  # the backoff
    return job.id


async def receipts(db: Database, operation_key: str) -> list[str]:
    async with db.read() as conn:
        rows = await conn.execute(
            select(workflow_job_effects.c.step_key).where(
                workflow_job_effects.c.operation_key == operation_key
            )
        )
        return list(rows.scalars())


async def outbox_types(db: Database, instance_id: int) -> list[str]:
    async with db.read() as conn:
        rows = await conn.execute(
            select(workflow_event_outbox.c.event_type).where(
                workflow_event_outbox.c.instance_id == instance_id
            )
        )
        return list(rows.scalars())


async def settled_once(db: Database, instance_id: int, job_id: int) -> dict[str, Any]:
    """The job after the re-run: succeeded (the re-run is no skip), with one
    success receipt; returns the job row."""
    (job,) = await jobs(db, instance_id, id=job_id)
    assert job["status"] == "succeeded"
    attempts = await attempt_rows(db, job_id)
    assert [(a.status, a.error_code) for a in attempts] == [
        ("failed", "lease_expired"),
        ("succeeded", None),
    ]
    return job


async def test_sync_trigger_result_is_not_resent_and_ends_succeeded_X1_L14_C7(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.body = b'{"id": "ERP-7"}'
    iid = await deploy_trigger(new_engine(db, clock), receiver.url)
    job_id = await crash_after_the_step(db, clock, "trigger_dispatch")
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["after"]

    assert await run_due_jobs(db, clock) == 1
    assert len(receiver.requests) == 1  # exactly one request
    job = await settled_once(db, iid, job_id)
    assert job["result"] == {"status": 200, "done": True}  # not skipped
    assert await receipts(db, job["operation_key"]) == ["trigger-result"]
    # the instance advanced once
    assert (await instance(db, iid))["form_data"] == {"orderId": "A1", "erpId": "ERP-7"}
    assert [t["node_key"] for t in await tasks(db, iid, status="pending")] == ["after"]
    assert [t["node_key"] for t in await tokens(db, iid, "active")] == ["after"]
    events = [e["event"] for e in await trace_events(db, iid)]
    assert events.count("trigger_succeeded") == 1
    assert (await outbox_types(db, iid)).count("trigger.succeeded") == 1


async def test_async_trigger_is_not_dispatched_twice_X1_L14(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.reply = 202
    iid = await deploy_trigger(new_engine(db, clock), receiver.url, mode="async")
    job_id = await crash_after_the_step(db, clock, "trigger_dispatch")
    (task,) = await tasks(db, iid, node_key="erp")
    assert task["status"] == "waiting"  # still waits for its callback

    assert await run_due_jobs(db, clock) == 1
    assert len(receiver.requests) == 1
    job = await settled_once(db, iid, job_id)
    assert job["result"] == {"status": 202, "awaitingCallback": True}
    assert await receipts(db, job["operation_key"]) == ["trigger-dispatched"]
    (task,) = await tasks(db, iid, node_key="erp")
    assert task["status"] == "waiting"
    events = [e["event"] for e in await trace_events(db, iid)]
    assert events.count("trigger_dispatched") == 1
    assert (await outbox_types(db, iid)).count("trigger.dispatched") == 1


async def test_external_dispatch_is_not_sent_twice_X2_L14(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    iid = await deploy_external(new_engine(db, clock), receiver.url)
    job_id = await crash_after_the_step(db, clock, "external_dispatch")

    assert await run_due_jobs(db, clock) == 1
    assert len(receiver.requests) == 1
    job = await settled_once(db, iid, job_id)
    assert job["result"] == {"status": 200, "dispatched": True}
    assert await receipts(db, job["operation_key"]) == ["dispatched"]
    (task,) = await tasks(db, iid)
    assert (task["status"], task["assignee"]) == ("pending", "external")
    events = [e["event"] for e in await trace_events(db, iid)]
    assert events.count("external_dispatched") == 1
    assert (await outbox_types(db, iid)).count("external.dispatched") == 1
