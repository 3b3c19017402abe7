"""Alert notifications as ledger jobs (SPEC O-22, L-5, L-17, X-4, X-5,
X-7): silences suppress and their end restores; a failing SMTP server leaves
a retrying job, not a lost alert; the webhook reaches a real receiver
signed with the rule's secret; in-app users get a message; two evaluators
on one database (two workers) fire once."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta

import httpx
import pytest
from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_messages
from flowledger.ops.alerts.evaluator import evaluate_once
from flowledger.ops.alerts.service import AlertEvaluator
from flowledger.ops.alerts.silences import create_silence, expire_silence
from flowledger.outbound.signing import verify
from flowledger.settings import Settings
from tests.alerts.support import (
    alert_events,
    dead_job,
    notification_jobs,
    rule,
    rule_row,
    set_job,
    tick,
)
from tests.ledger_access import ledger_of
from tests.notify.conftest import free_port
from tests.notify.servers import Collector
from tests.outbound.receivers import Receiver


async def silence(db: Database, clock: ManualClock, minutes: int, **matcher: object) -> int:
    async with db.begin() as conn:
        row = await create_silence(
            conn,
            tenant=matcher.get("tenant"),  # type: ignore[arg-type]
            rule_id=matcher.get("rule_id"),  # type: ignore[arg-type]
            metric=matcher.get("metric"),  # type: ignore[arg-type]
            starts_at=clock.now(),
            ends_at=clock.now() + timedelta(minutes=minutes),
            comment="maintenance window",
            actor="ops",
            now=clock.now(),
        )
    return int(row["id"])


async def test_silence_suppresses_and_its_end_restores_O22(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    rule_id = await rule(db, clock, for_seconds=0, email=["ops@example.com"])
    await silence(db, clock, 10, tenant="acme", metric="dead_letters")
    await dead_job(db, clock)
    summary = await tick(db, clock, minutes=0)
    (event,) = await alert_events(db)
    assert summary.fired == [event["id"]] and summary.silenced == [event["id"]]
    assert event["silenced"] and event["notified_at"] is None
    for _ in range(9):  # minutes 1..9: still silenced
        await tick(db, clock)
    assert smtp.envelopes == [] and await notification_jobs(db) == []
    assert (await rule_row(db, rule_id))["state"] == "firing"

    restored = await tick(db, clock)  # minute 10: the silence has ended
    assert restored.notified == [event["id"]] and restored.fired == []
    assert len(smtp.envelopes) == 1
    for _ in range(3):
        await tick(db, clock)
    assert len(smtp.envelopes) == 1  # once, not every minute
    assert [e["kind"] for e in await alert_events(db)] == ["firing"]


async def test_resolution_while_silenced_is_sent_after_the_silence_O22(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    rule_id = await rule(db, clock, for_seconds=0, email=["ops@example.com"])
    job = await dead_job(db, clock)
    await tick(db, clock, minutes=0)
    assert len(smtp.envelopes) == 1  # firing, not silenced
    silence_id = await silence(db, clock, 30, rule_id=rule_id)
    await set_job(db, job, status="canceled")
    await tick(db, clock)
    assert [e["kind"] for e in await alert_events(db)] == ["firing", "resolved"]
    assert len(smtp.envelopes) == 1
    async with db.begin() as conn:
        await expire_silence(conn, silence_id, now=clock.now(), tenants=None)
    await tick(db, clock)
    assert len(smtp.envelopes) == 2
    assert (await rule_row(db, rule_id))["notified"] == "resolved"


async def test_firing_and_resolved_both_inside_a_silence_send_nothing_O22(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    await rule(db, clock, for_seconds=0, email=["ops@example.com"])
    await silence(db, clock, 5)  # matches everything
    job = await dead_job(db, clock)
    await tick(db, clock, minutes=0)
    await set_job(db, job, status="canceled")
    await tick(db, clock)
    for _ in range(6):
        await tick(db, clock)
    assert [e["kind"] for e in await alert_events(db)] == ["firing", "resolved"]
    assert smtp.envelopes == []


async def test_a_silence_of_another_rule_or_tenant_does_not_apply_O22(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    rule_id = await rule(db, clock, for_seconds=0, email=["ops@example.com"])
    await silence(db, clock, 60, rule_id=rule_id + 1000)
    await silence(db, clock, 60, tenant="globex")
    await silence(db, clock, 60, metric="stuck_jobs")
    await dead_job(db, clock)
    await tick(db, clock, minutes=0)
    assert len(smtp.envelopes) == 1


async def test_failing_smtp_leaves_a_retrying_job_not_a_lost_alert_O22_L5(
    db: Database, clock: ManualClock, monkeypatch: pytest.MonkeyPatch, smtp: Collector
) -> None:
    live_port = smtp.port
    monkeypatch.setenv("FLOWLEDGER_SMTP_PORT", str(free_port()))  # nothing listens
    await rule(db, clock, for_seconds=0, email=["ops@example.com"])
    await dead_job(db, clock)
    await tick(db, clock, minutes=0)
    (job,) = await notification_jobs(db)
    assert (job["status"], job["attempts"]) == ("pending", 1)
    assert job["run_at"] > clock.now()  # backoff before the next attempt
    assert "SMTP" in (job["last_error"] or "")
    event_id = (await alert_events(db))[0]["id"]
    assert job["idempotency_key"] == f"alert-notification:{event_id}:email"

    await tick(db, clock)  # the evaluator does not enqueue it again
    assert len(await notification_jobs(db)) == 1

    monkeypatch.setenv("FLOWLEDGER_SMTP_PORT", str(live_port))  # the server is back
    await tick(db, clock, minutes=30)
    (job,) = await notification_jobs(db)
    assert job["status"] == "succeeded"
    assert len(smtp.envelopes) == 1


async def test_webhook_is_signed_and_in_app_users_get_a_message_O22_X5(
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    secret = "a-shared-secret-of-enough-length"
    rule_id = await rule(
        db,
        clock,
        for_seconds=0,
        webhook=f"{receiver.url}/alerts",
        secret=secret,
        in_app=["mia", "max"],
    )
    await dead_job(db, clock)
    await tick(db, clock, minutes=0)
    (request,) = receiver.requests
    (event,) = await alert_events(db)
    assert request.path == "/alerts"
    verify(
        secret,
        httpx.Headers(request.headers),
        request.body,
        now=clock.now().timestamp(),
        tolerance_s=300,
    )
    assert request.headers["x-flowledger-event"] == "alert.firing"
    assert request.headers["x-flowledger-delivery"] == str(event["id"])
    body = json.loads(request.body)
    assert body["type"] == "alert.firing" and body["value"] == 1.0
    assert body["rule"] == {
        "id": rule_id,
        "name": "dead letters pile up",
        "metric": "dead_letters",
        "comparison": "gt",
        "threshold": 0.0,
        "severity": "critical",
    }
    async with db.read() as conn:
        rows = (
            (await conn.execute(select(workflow_messages).order_by(workflow_messages.c.recipient)))
            .mappings()
            .all()
        )
    assert [(r["recipient"], r["tenant_id"], r["kind"]) for r in rows] == [
        ("max", "acme", "alert"),
        ("mia", "acme", "alert"),
    ]
    assert rows[0]["title"].startswith("[CRITICAL] FIRING")


async def test_webhook_5xx_is_retried_not_dead_lettered_O22_L17(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.reply = 503
    await rule(db, clock, for_seconds=0, webhook=receiver.url, secret="s" * 32)
    await dead_job(db, clock)
    await tick(db, clock, minutes=0)
    (job,) = await notification_jobs(db)
    assert (job["status"], job["attempts"]) == ("pending", 1)
    receiver.reply = 200
    await tick(db, clock, minutes=30)
    (job,) = await notification_jobs(db)
    assert job["status"] == "succeeded"
    assert len(receiver.requests) == 2


async def test_webhook_to_a_refused_address_is_a_permanent_failure_X4(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    """Not allow-listed: the SSRF guard refuses 127.0.0.1 when sending."""
    await rule(db, clock, for_seconds=0, webhook="http://127.0.0.1:9/hook", secret="s" * 32)
    await dead_job(db, clock)
    await tick(db, clock, minutes=0)
    (job,) = await notification_jobs(db)
    assert job["status"] == "dead"


async def test_two_evaluator_services_on_one_database_fire_once_O22_L20(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    await rule(db, clock, for_seconds=120, email=["ops@example.com"])
    await dead_job(db, clock)
    workers = [AlertEvaluator(db, clock, interval_s=60, holder=f"w{i}") for i in (1, 2)]
    ran = []
    for _ in range(5):
        for worker in workers:
            await worker.run_once()
            ran.append(worker.last_summary is not None)
        await tick(db, clock, minutes=0)  # run the jobs
        clock.advance(seconds=60)
    assert ran == [True, False] * 5  # w1 holds the lease, w2 never evaluates
    assert [e["kind"] for e in await alert_events(db)] == ["firing"]
    assert len(smtp.envelopes) == 1 and len(await notification_jobs(db)) == 1


async def test_a_second_leader_takes_over_when_the_first_stops_L20(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    await rule(db, clock, for_seconds=0, email=["ops@example.com"])
    first, second = (AlertEvaluator(db, clock, interval_s=60, holder=h) for h in ("a", "b"))
    await first.run_once()
    await second.run_once()
    assert first.last_summary is not None and second.last_summary is None
    clock.advance(seconds=121)  # a's lease (2 intervals) has lapsed
    await second.run_once()
    assert second.last_summary is not None


async def test_concurrent_passes_write_each_transition_once_O22(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    """Overlapping leaders: the UNIQUE event and the conditional update."""
    await rule(db, clock, for_seconds=0, email=["ops@example.com"], in_app=["mia"])
    await dead_job(db, clock)
    one, two = await asyncio.gather(
        evaluate_once(db, clock, ledger=ledger_of(db)),
        evaluate_once(db, clock, ledger=ledger_of(db)),
    )
    assert len(one.fired) + len(two.fired) == 1
    assert [e["kind"] for e in await alert_events(db)] == ["firing"]
    assert len(await notification_jobs(db)) == 2  # email + inApp, once each
    again = await evaluate_once(db, clock, ledger=ledger_of(db))
    assert again.fired == [] and again.jobs == []
