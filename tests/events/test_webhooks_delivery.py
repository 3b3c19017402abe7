"""Signed webhook deliveries (SPEC X-5, L-4, L-16, L-17) against real HTTP
receivers on 127.0.0.1 (allow-listed for their ports only), on both
backends: a receiver verifies the HMAC of every delivery with the
subscription's secret (and a wrong secret or a changed body fails); the body
carries the event id for dedupe; hits become ``delivered``; a subscription
disabled or deleted after its hit gives a ``skipped`` attempt and sends
nothing; a 500 dead-letters the delivery as ``external_outcome_unconfirmed``
after exactly one request and never resends it; a clear 4xx retries; an
delivery whose POST succeeded but whose settlement was lost is retried and
sends nothing again (its step receipt).
"""

from __future__ import annotations

import json

import httpx
import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.outbound import signing
from flowledger.settings import Settings
from flowledger.states import Pool
from flowledger.worker.context import JobContext
from flowledger.worker.executor import execute
from tests.events import webhook_support as support
from tests.events.webhook_support import (
    attempts,
    deployed_engine,
    dispatch_all,
    hits,
    jobs_of,
    outbox,
    relay,
    run_one_outbound,
    set_subscription,
    subscribe,
)
from tests.integration.engine_helpers import pending_task, run_due_jobs
from tests.ledger_access import ledger_of
from tests.outbound.receivers import Receiver
from tests.runtime_support import handler_for

secret_key = support.secret_key
receiver = support.outbound.receiver
other_receiver = support.outbound.other_receiver
outbound_env = support.outbound.outbound_env

TOLERANCE_S = 300
TOP_LEVEL = ("instanceId", "definitionKey")


def verified(secret: str, request: object, clock: ManualClock) -> dict[str, object]:
    """What a receiver does: check the signature over the raw body, then parse it."""
    headers = httpx.Headers(request.headers)  # type: ignore[attr-defined]
    body: bytes = request.body  # type: ignore[attr-defined]
    signing.verify(secret, headers, body, now=clock.now().timestamp(), tolerance_s=TOLERANCE_S)
    document: dict[str, object] = json.loads(body)
    return document


async def test_a_receiver_verifies_every_delivery_X5_L16(
    db: Database,
    clock: ManualClock,
    secret_key: str,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    engine = await deployed_engine(db, clock)
    subscription, secret = await subscribe(db, clock, f"{receiver.url}/hooks/flow")
    instance_id = await engine.start("leave", form={}, initiator="ann")
    await engine.approve(await pending_task(db, instance_id, "manager"), actor="mia")
    await dispatch_all(db, clock)

    events = {e["id"]: e for e in await outbox(db)}
    deliveries = {j["id"]: j for j in await jobs_of(db, "webhook_delivery")}
    hit_by_id = {h["id"]: h for h in await hits(db, subscription)}
    assert len(receiver.requests) == len(events) == len(hit_by_id) >= 4
    for request in receiver.requests:
        assert (request.method, request.path) == ("POST", "/hooks/flow")
        document = verified(secret, request, clock)
        source = events[document["id"]]  # type: ignore[index]
        assert document == {
            "id": source["id"],
            "type": source["event_type"],
            "occurredAt": source["created_at"].isoformat(),
            "tenantId": "default",
            "instanceId": instance_id,
            "definitionKey": "leave",
            "data": {k: v for k, v in source["payload"].items() if k not in TOP_LEVEL},
        }
        assert request.headers["content-type"] == "application/json"
        assert request.headers["x-flowledger-event"] == source["event_type"]
        hit = hit_by_id[int(request.headers["x-flowledger-delivery"])]
        assert hit["event_id"] == source["id"]
        assert (hit["status"], hit["response_status"]) == ("delivered", 200)
        job = deliveries[hit["job_id"]]
        assert job["status"] == "succeeded"
        assert request.headers["x-idempotency-key"] == job["operation_key"]  # L-16
        with pytest.raises(signing.SignatureInvalid):
            signing.verify(
                "not-the-secret",
                httpx.Headers(request.headers),
                request.body,
                now=clock.now().timestamp(),
                tolerance_s=TOLERANCE_S,
            )
        with pytest.raises(signing.SignatureInvalid):
            signing.verify(
                secret,
                httpx.Headers(request.headers),
                request.body.replace(b'"leave"', b'"other"'),
                now=clock.now().timestamp(),
                tolerance_s=TOLERANCE_S,
            )
    assert {e["event_type"] for e in events.values()} >= {
        "instance.started",
        "task.created",
        "task.completed",
        "instance.finished",
    }


async def test_filters_send_each_receiver_only_its_events_X5(
    db: Database,
    clock: ManualClock,
    secret_key: str,
    receiver: Receiver,
    other_receiver: Receiver,
    outbound_env: Settings,
) -> None:
    engine = await deployed_engine(db, clock)
    _, tasks_secret = await subscribe(db, clock, receiver.url, event_types=("task.created",))
    _, expense_secret = await subscribe(
        db, clock, other_receiver.url, event_types=("instance.*",), definition_key="expense"
    )
    await subscribe(db, clock, receiver.url, enabled=False)
    leave = await engine.start("leave", form={}, initiator="ann")
    expense = await engine.start("expense", form={}, initiator="ann")
    await dispatch_all(db, clock)

    got = [verified(tasks_secret, r, clock) for r in receiver.requests]
    assert sorted((d["type"], d["instanceId"]) for d in got) == [  # type: ignore[type-var]
        ("task.created", leave),
        ("task.created", expense),
    ]
    got = [verified(expense_secret, r, clock) for r in other_receiver.requests]
    assert [(d["type"], d["definitionKey"]) for d in got] == [("instance.started", "expense")]


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        ({"enabled": False}, "subscription disabled"),
        ({"deleted_at": ManualClock().now(), "enabled": False}, "subscription deleted"),
    ],
)
async def test_a_subscription_disabled_after_its_hit_gives_a_skipped_attempt_L4(
    change: dict[str, object],
    reason: str,
    db: Database,
    clock: ManualClock,
    secret_key: str,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    engine = await deployed_engine(db, clock)
    subscription, _ = await subscribe(db, clock, receiver.url, event_types=("instance.started",))
    await engine.start("leave", form={}, initiator="ann")
    await relay(db, clock)
    assert await run_one_outbound(db, clock) == "event_dispatch"
    (hit,) = await hits(db, subscription)
    assert hit["status"] == "pending"

    await set_subscription(db, subscription, **change)
    await run_due_jobs(db, clock)

    assert receiver.requests == []
    (job,) = await jobs_of(db, "webhook_delivery")
    assert (job["status"], job["result"]) == ("succeeded", {"skipped": reason})
    (attempt,) = await attempts(db, job["id"])
    assert attempt["status"] == "skipped"
    (hit,) = await hits(db, subscription)
    assert (hit["status"], hit["last_error"]) == ("skipped", reason)


async def test_a_receiver_500_dead_letters_the_delivery_unconfirmed_L17(
    db: Database,
    clock: ManualClock,
    secret_key: str,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.reply = 500
    engine = await deployed_engine(db, clock)
    subscription, _ = await subscribe(db, clock, receiver.url, event_types=("instance.started",))
    await engine.start("leave", form={}, initiator="ann")
    await dispatch_all(db, clock)
    clock.advance(seconds=7200)
    await dispatch_all(db, clock)

    assert len(receiver.requests) == 1  # never resent
    (job,) = await jobs_of(db, "webhook_delivery")
    assert (job["status"], job["last_error_code"]) == ("dead", "external_outcome_unconfirmed")
    assert job["side_effect_at"] is not None
    (attempt,) = await attempts(db, job["id"])
    assert (attempt["status"], attempt["response"]["status"]) == ("failed", 500)
    (hit,) = await hits(db, subscription)
    assert (hit["status"], hit["response_status"]) == ("failed", 500)


async def test_a_clear_4xx_is_retried_and_then_delivered_L17(
    db: Database,
    clock: ManualClock,
    secret_key: str,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.reply = 400
    engine = await deployed_engine(db, clock)
    subscription, secret = await subscribe(
        db, clock, receiver.url, event_types=("instance.started",)
    )
    await engine.start("leave", form={}, initiator="ann")
    await dispatch_all(db, clock)
    (job,) = await jobs_of(db, "webhook_delivery")
    assert (job["status"], job["last_error_code"]) == ("pending", "http_client_error")
    (hit,) = await hits(db, subscription)
    assert (hit["status"], hit["response_status"]) == ("failed", 400)

    receiver.reply = 200
    clock.advance(seconds=31)
    await dispatch_all(db, clock)
    (job,) = await jobs_of(db, "webhook_delivery")
    assert job["status"] == "succeeded"
    (hit,) = await hits(db, subscription)
    assert (hit["status"], hit["response_status"], hit["last_error"]) == ("delivered", 200, None)
    first, second = receiver.requests
    assert verified(secret, first, clock) == verified(secret, second, clock)
    assert first.headers["x-idempotency-key"] == second.headers["x-idempotency-key"]


async def test_a_delivery_whose_settlement_was_lost_is_retried_without_resending_L14_L17(
    db: Database,
    clock: ManualClock,
    secret_key: str,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    engine = await deployed_engine(db, clock)
    subscription, _ = await subscribe(db, clock, receiver.url, event_types=("instance.started",))
    await engine.start("leave", form={}, initiator="ann")
    await relay(db, clock)
    assert await run_one_outbound(db, clock) == "event_dispatch"

    (claimed,) = await ledger_of(db).jobs_claim(
        db, pool=Pool.OUTBOUND, limit=1, node_id="n", now=clock.now()
    )
    handler = handler_for(db, clock, claimed.type)
    outcome = await execute(JobContext(claimed, db, clock), handler, abort_grace_s=1)
    assert outcome is not None and outcome.kind == "success"  # …but the worker dies unsettled
    (hit,) = await hits(db, subscription)
    assert hit["status"] == "delivered"
    clock.advance(seconds=300)
    async with db.begin() as conn:  # the drain reclaims the expired lease
        await ledger_of(conn).jobs_rescue(conn, now=clock.now())
    (job,) = await jobs_of(db, "webhook_delivery")
    # the receipt confirmed the write: an ordinary retry, not the L-17 dead letter
    assert (job["status"], job["last_error_code"]) == ("pending", "lease_expired")

    clock.advance(seconds=60)
    await run_due_jobs(db, clock)
    (job,) = await jobs_of(db, "webhook_delivery")
    assert (job["status"], job["result"]) == ("succeeded", {"hitId": hit["id"], "status": 200})
    assert len(receiver.requests) == 1
