"""The alert evaluator against a real SMTP server (SPEC O-22, L-14, L-15):
duration suppression (``for: 5m`` does not fire at 4 minutes, fires at 5),
one firing and one resolved email per episode — not one per minute — and
the state machine ok → pending → firing → resolved, on both backends."""

from __future__ import annotations

import email
from email.policy import default
from types import MappingProxyType
from typing import Any

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ops.alerts.evaluator import evaluate_once
from flowledger.ops.alerts.metrics import HEALTH_SCORE, METRICS, Metric
from flowledger.ops.alerts.rules import check_metric, update_rule
from flowledger.ops.runtime.status import job_figures
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
from tests.notify.servers import Collector


def subjects(collector: Collector) -> list[str]:
    return [
        str(email.message_from_bytes(e.original_content, policy=default)["Subject"])
        for e in collector.envelopes
    ]


async def test_for_5m_fires_at_5_minutes_not_4_and_emails_once_per_transition_O22(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    rule_id = await rule(db, clock, for_seconds="5m", email=["ops@example.com"])
    job = await dead_job(db, clock)

    first = await tick(db, clock, minutes=0)  # the condition starts holding now
    assert first.evaluated == 1 and first.pending == 1
    assert (await rule_row(db, rule_id))["state"] == "pending"
    for _ in range(4):  # 1, 2, 3, 4 minutes: still pending
        summary = await tick(db, clock)
        assert summary.fired == []
    assert (await rule_row(db, rule_id))["state"] == "pending"
    assert await alert_events(db) == []
    assert smtp.envelopes == []

    fired = await tick(db, clock)  # 5 minutes
    assert len(fired.fired) == 1
    (event,) = await alert_events(db)
    assert (event["kind"], event["value"], event["threshold"]) == ("firing", 1.0, 0.0)
    assert event["notified_at"] == clock.now() and not event["silenced"]
    assert subjects(smtp) == ["[CRITICAL] FIRING: dead letters pile up (dead_letters 1 items > 0)"]
    assert smtp.envelopes[0].rcpt_tos == ["ops@example.com"]

    for _ in range(5):  # still firing: no new event, no new email
        assert (await tick(db, clock)).fired == []
    assert len(smtp.envelopes) == 1
    assert (await rule_row(db, rule_id))["state"] == "firing"

    await set_job(db, job, status="canceled")
    resolved = await tick(db, clock)
    assert len(resolved.resolved) == 1
    for _ in range(3):
        await tick(db, clock)
    kinds = [(e["kind"], e["value"]) for e in await alert_events(db)]
    assert kinds == [("firing", 1.0), ("resolved", 0.0)]
    assert len(smtp.envelopes) == 2
    assert subjects(smtp)[1].startswith("[CRITICAL] RESOLVED: dead letters pile up")
    assert (await rule_row(db, rule_id))["state"] == "resolved"
    jobs = await notification_jobs(db)
    assert [j["status"] for j in jobs] == ["succeeded", "succeeded"]


async def test_condition_that_stops_while_pending_never_fires_O22(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    rule_id = await rule(db, clock, for_seconds=300, email=["ops@example.com"])
    job = await dead_job(db, clock)
    await tick(db, clock, minutes=0)
    await tick(db, clock, minutes=3)
    await set_job(db, job, status="canceled")
    await tick(db, clock)  # back to ok
    row = await rule_row(db, rule_id)
    assert (row["state"], row["state_since"]) == ("ok", None)
    await set_job(db, job, status="dead")
    await tick(db, clock)  # pending again, the duration starts over
    await tick(db, clock, minutes=4)
    assert (await rule_row(db, rule_id))["state"] == "pending"
    assert await alert_events(db) == [] and smtp.envelopes == []
    await tick(db, clock, minutes=1)
    assert [e["kind"] for e in await alert_events(db)] == ["firing"]


async def test_rule_scope_counts_only_its_tenant_and_overall_counts_all_O22(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    acme = await rule(db, clock, tenant="acme", for_seconds=0, threshold=1)
    other = await rule(db, clock, tenant="globex", for_seconds=0, threshold=0)
    overall = await rule(db, clock, tenant=None, for_seconds=0, threshold=1)
    await dead_job(db, clock, "acme")
    await dead_job(db, clock, "initech")
    summary = await evaluate_once(db, clock, ledger=ledger_of(db))
    assert summary.evaluated == 3
    values = {r: (await rule_row(db, r))["last_value"] for r in (acme, other, overall)}
    assert values == {acme: 1.0, other: 0.0, overall: 2.0}
    states = {r: (await rule_row(db, r))["state"] for r in (acme, other, overall)}
    assert states == {acme: "ok", other: "ok", overall: "firing"}


async def test_no_data_is_not_a_breach_and_resolves_O22(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    """job_failure_rate without attempts in the hour is "no data"."""
    rule_id = await rule(
        db, clock, metric="job_failure_rate", comparison="lt", threshold=50, for_seconds=0
    )
    await evaluate_once(db, clock, ledger=ledger_of(db))
    row = await rule_row(db, rule_id)
    assert (row["state"], row["last_value"]) == ("ok", None)


async def test_disabled_rule_is_not_evaluated_and_disabling_resets_silently_O22(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    rule_id = await rule(db, clock, for_seconds=0, email=["ops@example.com"])
    await dead_job(db, clock)
    await tick(db, clock, minutes=0)
    assert (await rule_row(db, rule_id))["state"] == "firing"
    async with db.begin() as conn:
        await update_rule(conn, rule_id, {"enabled": False}, now=clock.now(), tenants=None)
    row = await rule_row(db, rule_id)
    assert (row["state"], row["state_since"]) == ("ok", None)
    summary = await tick(db, clock)
    assert summary.evaluated == 0
    assert len(smtp.envelopes) == 1  # no resolved notice for a disabled rule
    async with db.begin() as conn:
        await update_rule(conn, rule_id, {"enabled": True}, now=clock.now(), tenants=None)
    await tick(db, clock)  # a new episode
    assert [(e["kind"], e["episode"]) for e in await alert_events(db)] == [
        ("firing", 1),
        ("firing", 2),
    ]
    assert len(smtp.envelopes) == 2


async def test_a_registered_metric_becomes_a_valid_rule_metric_O22(
    db: Database, clock: ManualClock, smtp: Collector
) -> None:
    """``engine_health_score`` is a registered metric (the health
    inspection's score, SPEC O-16) and is evaluated like any other. (The
    provider is swapped for one that reads the dead-job count so the test
    controls the value.)"""
    assert check_metric(HEALTH_SCORE) == HEALTH_SCORE

    async def score(conn: Any, tenant_ids: list[str] | None, *, now: Any) -> float | None:
        dead = await job_figures(conn, now, tenant_ids)
        return 100.0 - 10 * dead["dead"]

    table = MappingProxyType(
        {**METRICS, HEALTH_SCORE: Metric(HEALTH_SCORE, "points", "score", score)}
    )
    assert check_metric(HEALTH_SCORE) == HEALTH_SCORE
    rule_id = await rule(
        db, clock, metric=HEALTH_SCORE, comparison="lt", threshold=95, for_seconds=0
    )
    await evaluate_once(db, clock, ledger=ledger_of(db), metrics=table)
    assert (await rule_row(db, rule_id))["state"] == "ok"
    await dead_job(db, clock)
    await evaluate_once(db, clock, ledger=ledger_of(db), metrics=table)
    row = await rule_row(db, rule_id)
    assert (row["state"], row["last_value"]) == ("firing", 90.0)
