"""The outbox relay and ``event_dispatch`` (SPEC E-10, X-5, L-15), on both
backends: the relay costs one indexed query when nothing is pending and
enqueues one dispatch job however many workers run it; a dispatch job fans
events out to matching subscriptions (tenant, event types with wildcards,
definition filter, enabled), records one hit per (subscription, event) —
never twice, even when an event is dispatched again — enqueues one
``webhook_delivery`` per hit carrying the event's instance, tenant, traceId
and node key, and marks the rows dispatched; a full batch enqueues the next
job; a dispatch job that ended without taking the oldest row is followed by
a new one; a poisonous event is marked failed without holding up the rest.
"""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import text, update

from flowledger.clock import ManualClock
from flowledger.db.automation_schema import workflow_automation_rules
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_event_outbox
from flowledger.db.event_schema import workflow_event_subscriptions
from flowledger.events import dispatch
from flowledger.events import outbox as outbox_module
from flowledger.events.dispatch import _saga_node_key, dispatch_pending
from flowledger.events.relay import EventRelay
from flowledger.handlers.services import engine_services
from flowledger.settings import Settings
from tests import statement_watch
from tests.events import webhook_support as support
from tests.events.webhook_support import (
    add_outbox_row,
    deployed_engine,
    dispatch_all,
    hits,
    jobs_of,
    outbox,
    relay,
    subscribe,
)
from tests.integration.engine_helpers import pending_task, run_due_jobs, trace_events
from tests.ledger_access import ledger_of

secret_key = support.secret_key

URL = "http://192.0.2.10/in"  # refused by the SSRF guard: deliveries never connect


async def test_idle_relay_is_one_indexed_query_and_many_relays_enqueue_one_job_E10_L15(
    db: Database, clock: ManualClock, secret_key: str
) -> None:
    assert any(isinstance(s, EventRelay) for s in engine_services(db, clock, settings=Settings()))
    statements: list[str] = []

    def seen(statement: str) -> None:
        if statement.split()[0].upper() not in {"BEGIN", "COMMIT", "ROLLBACK"}:
            statements.append(statement)

    remove = statement_watch.listen(db, seen)
    try:
        assert await relay(db, clock) is None
    finally:
        remove()
    (only,) = statements
    assert "FROM workflow_event_outbox" in only and "status" in only

    engine = await deployed_engine(db, clock)
    await engine.start("leave", form={}, initiator="ann")
    workers = [EventRelay(db, clock) for _ in range(3)]
    created = [await w.relay_once() for w in workers]
    assert created[0] is not None and created[1:] == [None, None]
    (job,) = await jobs_of(db, "event_dispatch")
    assert job["idempotency_key"] == f"event_dispatch:{(await outbox(db))[0]['id']}"
    assert await relay(db, clock) is None  # still pending: no second job


async def test_dispatch_matches_records_hits_and_enqueues_deliveries_X5(
    db: Database, clock: ManualClock, secret_key: str
) -> None:
    engine = await deployed_engine(db, clock)
    every, _ = await subscribe(db, clock, URL)
    created, _ = await subscribe(db, clock, URL, event_types=("task.created",))
    expense_instance, _ = await subscribe(
        db, clock, URL, event_types=("instance.*",), definition_key="expense"
    )
    disabled, _ = await subscribe(db, clock, URL, enabled=False)
    other_tenant, _ = await subscribe(db, clock, URL, tenant="acme")

    leave = await engine.start("leave", form={}, initiator="ann")
    expense = await engine.start("expense", form={}, initiator="ann")
    await relay(db, clock)
    assert await run_due_jobs(db, clock) >= 1 + 4  # dispatch, then deliveries (refused)

    events = await outbox(db)
    assert {e["status"] for e in events} == {"dispatched"}
    assert all(e["dispatched_at"] == clock.now() for e in events)
    by_id = {e["id"]: e for e in events}

    def hit_events(subscription_id: int, all_hits: list[dict[str, Any]]) -> set[tuple[Any, ...]]:
        return {
            (by_id[h["event_id"]]["event_type"], h["instance_id"])
            for h in all_hits
            if h["subscription_id"] == subscription_id
        }

    all_hits = await hits(db)
    assert hit_events(every, all_hits) == {(e["event_type"], e["instance_id"]) for e in events}
    assert hit_events(created, all_hits) == {("task.created", leave), ("task.created", expense)}
    assert hit_events(expense_instance, all_hits) == {("instance.started", expense)}
    assert hit_events(disabled, all_hits) == set()
    assert hit_events(other_tenant, all_hits) == set()

    deliveries = {j["id"]: j for j in await jobs_of(db, "webhook_delivery")}
    assert len(deliveries) == len(all_hits)
    for hit in all_hits:
        job = deliveries[hit["job_id"]]
        source = by_id[hit["event_id"]]
        assert job["idempotency_key"] == f"webhook_delivery:{hit['id']}"
        assert (job["instance_id"], job["tenant_id"], job["trace_id"]) == (
            source["instance_id"],
            "default",
            source["trace_id"],
        )
        assert job["node_key"] == source["payload"].get("nodeKey")
        assert job["payload"]["event"]["id"] == source["id"]
    task_hits = [h for h in all_hits if h["subscription_id"] == created]
    assert {deliveries[h["job_id"]]["node_key"] for h in task_hits} == {"manager", "check"}


async def test_an_event_dispatched_again_gets_no_second_hit_or_delivery_X5_L15(
    db: Database, clock: ManualClock, secret_key: str
) -> None:
    engine = await deployed_engine(db, clock)
    await subscribe(db, clock, URL)
    await engine.start("leave", form={}, initiator="ann")
    await relay(db, clock)
    await run_due_jobs(db, clock)
    before = (await hits(db), await jobs_of(db, "webhook_delivery"))
    assert before[0]

    async with db.begin() as conn:  # at-least-once: the rows come round again
        await conn.execute(update(workflow_event_outbox).values(status="pending"))
    await relay(db, clock)
    await run_due_jobs(db, clock)

    assert {e["status"] for e in await outbox(db)} == {"dispatched"}
    assert (await hits(db), await jobs_of(db, "webhook_delivery")) == before
    assert len(await jobs_of(db, "event_dispatch")) == 2


async def test_a_full_batch_enqueues_the_next_job_and_the_next_batch_follows_X5(
    db: Database, clock: ManualClock, secret_key: str
) -> None:
    await subscribe(db, clock, URL, event_types=("custom.*",))
    ids = [await add_outbox_row(db, clock.now()) for _ in range(5)]
    async with db.begin() as conn:
        report = await dispatch_pending(conn, now=clock.now(), ledger=ledger_of(conn), limit=3)
    assert (report.events, report.hits) == (3, 3)
    (job,) = await jobs_of(db, "event_dispatch")
    assert job["id"] == report.next_job_id
    assert job["idempotency_key"] == f"event_dispatch:{ids[3]}"
    assert [e["status"] for e in await outbox(db)] == ["dispatched"] * 3 + ["pending"] * 2

    async with db.begin() as conn:
        last = await dispatch_pending(conn, now=clock.now(), ledger=ledger_of(conn), limit=3)
    assert (last.events, last.next_job_id) == (2, None)  # not full: the relay covers the rest
    assert len(await hits(db)) == 5


async def test_a_dispatch_job_that_ended_without_the_oldest_row_is_followed_X5(
    db: Database, clock: ManualClock, secret_key: str
) -> None:
    oldest = await add_outbox_row(db, clock.now())
    first = await relay(db, clock)
    assert first is not None
    async with db.begin() as conn:  # an operator skips it before it ran
        await ledger_of(conn).job_cancel(conn, first, now=clock.now())
    second = await relay(db, clock)
    assert second is not None and second != first
    (_, job) = await jobs_of(db, "event_dispatch")
    assert job["idempotency_key"] == f"event_dispatch:{oldest}:after:{first}"
    assert await relay(db, clock) is None
    await dispatch_all(db, clock)
    assert [e["status"] for e in await outbox(db)] == ["dispatched"]


async def test_a_poisonous_event_is_marked_failed_and_the_rest_dispatch_X5(
    db: Database, clock: ManualClock, secret_key: str
) -> None:
    engine = await deployed_engine(db, clock)
    await subscribe(db, clock, URL)
    instance_id = await engine.start("leave", form={}, initiator="ann")
    poison = await add_outbox_row(db, clock.now(), payload=["not", "an", "object"])
    async with db.begin() as conn:  # the same poison inside an instance's trace
        await conn.execute(
            update(workflow_event_outbox)
            .where(workflow_event_outbox.c.id == poison)
            .values(instance_id=instance_id)
        )
    await relay(db, clock)
    assert await support.run_one_outbound(db, clock) == "event_dispatch"

    statuses = {e["id"]: e["status"] for e in await outbox(db)}
    assert statuses.pop(poison) == "failed"
    assert set(statuses.values()) == {"dispatched"}
    assert {h["event_id"] for h in await hits(db)} == set(statuses)
    (job,) = await jobs_of(db, "event_dispatch")
    assert job["status"] == "succeeded"
    assert [f["eventId"] for f in job["result"]["failed"]] == [poison]
    traced = await trace_events(db, instance_id)
    failed = [t["detail"]["eventId"] for t in traced if t["event"] == "event_dispatch_failed"]
    assert failed == [poison]
    assert await relay(db, clock) is None  # a failed row is not pending: nothing loops


async def test_a_failing_fan_out_rolls_back_only_its_own_event_X5(
    db: Database, clock: ManualClock, secret_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    subscription, _ = await subscribe(db, clock, URL, event_types=("custom.*",))
    good = await add_outbox_row(db, clock.now())
    bad = await add_outbox_row(db, clock.now(), event_type="custom.bad")
    real = dispatch.enqueue_automation

    async def broken_rule(conn: Any, event: Any, *, now: Any, ledger: Any) -> int:
        if event["event_type"] == "custom.bad":  # after its hit and delivery job were written
            raise ValueError("a rule that cannot run")
        return await real(conn, event, now=now, ledger=ledger)

    monkeypatch.setattr(dispatch, "enqueue_automation", broken_rule)
    async with db.begin() as conn:
        report = await dispatch.dispatch_pending(conn, now=clock.now(), ledger=ledger_of(conn))
    assert report.failed == [{"eventId": bad, "error": "ValueError: a rule that cannot run"}]
    assert [h["event_id"] for h in await hits(db, subscription)] == [good]
    (delivery,) = await jobs_of(db, "webhook_delivery")
    assert delivery["payload"]["event"]["id"] == good
    assert [e["status"] for e in await outbox(db)] == ["dispatched", "failed"]


async def test_an_empty_dispatch_is_a_skipped_attempt_L4(
    db: Database, clock: ManualClock, secret_key: str
) -> None:
    await add_outbox_row(db, clock.now())
    await relay(db, clock)
    async with db.begin() as conn:  # someone else dispatched the row meanwhile
        await dispatch_pending(conn, now=clock.now(), ledger=ledger_of(conn))
    await run_due_jobs(db, clock)
    (job,) = await jobs_of(db, "event_dispatch")
    assert (job["status"], job["result"]) == ("succeeded", {"skipped": "no pending events"})
    (attempt,) = await support.attempts(db, job["id"])
    assert attempt["status"] == "skipped"


async def test_events_of_a_finished_instance_still_dispatch_L22(
    db: Database, clock: ManualClock, secret_key: str
) -> None:
    engine = await deployed_engine(db, clock)
    subscription, _ = await subscribe(db, clock, URL, event_types=("instance.finished",))
    instance_id = await engine.start("leave", form={}, initiator="ann")
    await engine.approve(await pending_task(db, instance_id, "manager"), actor="mia")
    await relay(db, clock)
    await run_due_jobs(db, clock)
    (hit,) = await hits(db, subscription)
    assert hit["instance_id"] == instance_id


@pytest.mark.parametrize(
    ("event_type", "expected"),
    [
        ("task.created", "erp"),
        ("trigger.succeeded", "erp"),
        ("node.failed", None),
        ("trigger.failed", None),
        ("external.dispatch_failed", None),
    ],
)
def test_a_delivery_about_a_failure_names_no_node_for_saga_C7(
    event_type: str, expected: str | None
) -> None:
    # Saga rollback compensates nodes of succeeded webhook deliveries; telling
    # a receiver that a node failed did nothing that needs undoing
    event = {"event_type": event_type, "payload": {"nodeKey": "erp"}}
    assert _saga_node_key(event) == expected


def _reads_payloads(statements: list[str]) -> bool:
    """Whether a statement read the outbox rows themselves (the fan-out path)."""
    return any(
        "FROM workflow_event_outbox" in s and "workflow_event_outbox.payload" in s
        for s in statements
    )


async def test_with_nobody_listening_a_batch_is_dispatched_in_one_statement_X5(
    db: Database, clock: ManualClock, secret_key: str
) -> None:
    """No live enabled subscription and no enabled rule in any tenant (a
    disabled and a deleted subscription do not listen): the batch becomes
    dispatched by one statement that reads no payload; a full batch still
    enqueues the next job, and the rest follows (issue 15)."""
    await subscribe(db, clock, URL, enabled=False)
    deleted, _ = await subscribe(db, clock, URL)
    async with db.begin() as conn:
        await conn.execute(
            update(workflow_event_subscriptions)
            .where(workflow_event_subscriptions.c.id == deleted)
            .values(deleted_at=clock.now())
        )
    ids = [await add_outbox_row(db, clock.now()) for _ in range(5)]
    with statement_watch.watched(db) as statements:
        async with db.begin() as conn:
            report = await dispatch_pending(conn, now=clock.now(), ledger=ledger_of(conn), limit=3)
    assert (report.events, report.hits, report.automation_jobs) == (3, 0, 0)
    outbox_statements = [s for s in statements if "workflow_event_outbox" in s]
    assert len(outbox_statements) == 2  # the batch, then the next job's oldest row
    assert outbox_statements[0].lstrip().upper().startswith("UPDATE")
    assert not _reads_payloads(statements)
    (job,) = await jobs_of(db, "event_dispatch")
    assert (job["id"], job["idempotency_key"]) == (report.next_job_id, f"event_dispatch:{ids[3]}")
    rows = await outbox(db)
    assert [e["status"] for e in rows] == ["dispatched"] * 3 + ["pending"] * 2
    assert all(e["dispatched_at"] == clock.now() for e in rows[:3])
    async with db.begin() as conn:
        last = await dispatch_pending(conn, now=clock.now(), ledger=ledger_of(conn), limit=3)
    assert (last.events, last.next_job_id) == (2, None)
    assert [e["status"] for e in await outbox(db)] == ["dispatched"] * 5
    assert await hits(db) == []


@pytest.mark.parametrize("listener", ["subscription in another tenant", "automation rule"])
async def test_a_listener_in_any_tenant_sends_the_batch_through_the_fan_out_X5_X6(
    db: Database, clock: ManualClock, secret_key: str, listener: str
) -> None:
    """One live subscription or enabled rule anywhere, even in a tenant none of
    the events belong to, and the batch is read and matched event by event."""
    if listener == "automation rule":
        async with db.begin() as conn:
            await conn.execute(
                workflow_automation_rules.insert().values(
                    tenant_id="acme",
                    name="r",
                    event_types=["custom.*"],
                    actions=[],
                    enabled=True,
                    created_by="dev",
                    created_at=clock.now(),
                    updated_at=clock.now(),
                )
            )
    else:
        await subscribe(db, clock, URL, tenant="acme")
    await add_outbox_row(db, clock.now())
    with statement_watch.watched(db) as statements:
        async with db.begin() as conn:
            report = await dispatch_pending(conn, now=clock.now(), ledger=ledger_of(conn))
    assert (report.events, report.hits) == (1, 0)  # the listener is another tenant's
    assert _reads_payloads(statements)
    assert [e["status"] for e in await outbox(db)] == ["dispatched"]


@pytest.mark.parametrize("backend", ["postgresql"])  # the planner's choice
async def test_the_unheard_batch_reads_the_outbox_by_index_X5(
    db: Database, clock: ManualClock
) -> None:
    """The one-statement dispatch finds its batch through the pending index
    and its rows through the primary key, never by reading the whole outbox
    (``IN (batch)`` was planned as a hash semi-join over a sequential scan)."""
    async with db.begin() as conn:
        await conn.execute(
            workflow_event_outbox.insert(),
            [
                {
                    "tenant_id": "default",
                    "event_type": "custom.event",
                    "payload": {},
                    "status": "dispatched" if i % 10 else "pending",
                    "trace_id": "t",
                    "created_at": clock.now(),
                }
                for i in range(5000)
            ],
        )
    query = outbox_module.unheard_update(
        200, now=clock.now(), nobody_listens=dispatch.nobody_listens()
    )
    async with db.begin() as conn:
        await conn.execute(text("ANALYZE workflow_event_outbox"))
        compiled = query.compile(dialect=conn.dialect)
        plan = (
            await conn.exec_driver_sql("EXPLAIN (FORMAT JSON) " + str(compiled), compiled.params)
        ).scalar_one()
    scans: list[tuple[str, str]] = []

    def walk(node: dict[str, Any]) -> None:
        if node.get("Relation Name") == "workflow_event_outbox":
            scans.append((node["Node Type"], node.get("Index Name", "")))
        for child in node.get("Plans", []):
            walk(child)

    walk(plan[0]["Plan"])
    assert scans and all(kind != "Seq Scan" for kind, _ in scans), scans
