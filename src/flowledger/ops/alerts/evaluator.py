"""The alert evaluator (SPEC O-22): one pass over the enabled rules.

:func:`evaluate_once` derives every needed (metric, tenant) value once, in
one read snapshot (:func:`~flowledger.ops.alerts.metrics.measure`), then
moves each rule through its states in one writing transaction::

    condition holds                      condition does not hold (or no data)
    ok | resolved --> pending (since now)   pending --> ok
    pending, held for ``for`` --> firing    firing  --> resolved
    (``for`` 0: ok | resolved --> firing)

Entering ``firing`` starts a new *episode* (``episode + 1``) and writes a
``firing`` event; leaving it writes a ``resolved`` event; both carry the
value that decided. Events are UNIQUE per (rule, episode, kind) and every
state change is a conditional UPDATE on the state it read (``WHERE state =
:old AND episode = :old``), so two evaluators running at once (two workers
whose leader leases overlapped, or a bench next to the service) write each
transition once and notify once.

Notifications: once per transition, never while silenced. The rule keeps
which notification of the current episode went out (``notified``): a
firing episode owes ``firing`` until it is sent, and a resolved one owes
``resolved`` only if ``firing`` was sent. A pass that finds a notice owed
and no active matching silence (:mod:`.silences`) sends it — right at the
transition, or at the first pass after the silence ended. Sending means
enqueuing one ``alert_notification`` job per configured channel (email,
webhook, inApp) in the same transaction as the state change, idempotency key
``alert-notification:<eventId>:<channel>``; the job is retried by the ledger
when SMTP or the webhook fails, and stays visible in the job ledger.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import bindparam, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.clock import Clock
from flowledger.db.alert_schema import workflow_alert_events as events
from flowledger.db.alert_schema import workflow_alert_rules as rules
from flowledger.db.database import Database
from flowledger.db.dialects import upsert
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import JobSpec
from flowledger.ledger.types import JobType
from flowledger.ops.alerts.metrics import METRICS, Metric, measure
from flowledger.ops.alerts.silences import active_silences, matches
from flowledger.states import Pool

ALERT_NOTIFICATION = "alert_notification"
ALERT_NOTIFICATION_TYPE = JobType(ALERT_NOTIFICATION, Pool.OUTBOUND, max_attempts=8)

FIRING, RESOLVED, PENDING, OK = "firing", "resolved", "pending", "ok"
_COMPARE = {
    "gt": lambda v, t: v > t,
    "gte": lambda v, t: v >= t,
    "lt": lambda v, t: v < t,
    "lte": lambda v, t: v <= t,
}


@dataclass
class EvaluationSummary:
    """What one pass did (ids of the events it wrote, jobs it enqueued)."""

    evaluated: int = 0
    pending: int = 0
    firing: int = 0
    fired: list[int] = field(default_factory=list)
    resolved: list[int] = field(default_factory=list)
    notified: list[int] = field(default_factory=list)
    silenced: list[int] = field(default_factory=list)
    jobs: list[int] = field(default_factory=list)
    duration_ms: float = 0.0


def holds(value: float | None, comparison: str, threshold: float) -> bool:
    """Whether the rule's condition holds (never on missing data)."""
    return value is not None and bool(_COMPARE[comparison](value, threshold))


@dataclass
class _Step:
    state: str
    since: datetime | None
    episode: int
    event: str | None  # the event kind written by this transition


def next_state(rule: dict[str, Any], value: float | None, now: datetime) -> _Step:
    """The rule's state after seeing ``value`` at ``now`` (see the module docstring)."""
    state, since, episode = rule["state"], rule["state_since"], int(rule["episode"])
    wait = timedelta(seconds=int(rule["for_seconds"]))
    if holds(value, rule["comparison"], float(rule["threshold"])):
        if state in (OK, RESOLVED):
            if wait:
                return _Step(PENDING, now, episode, None)
            return _Step(FIRING, now, episode + 1, FIRING)
        if state == PENDING and since is not None and now - since >= wait:
            return _Step(FIRING, now, episode + 1, FIRING)
        return _Step(state, since, episode, None)
    if state == PENDING:
        return _Step(OK, None, episode, None)
    if state == FIRING:
        return _Step(RESOLVED, now, episode, RESOLVED)
    return _Step(state, since, episode, None)


def owed(state: str, notified: str | None) -> str | None:
    """The notification the current episode still owes, if any."""
    if state == FIRING and notified is None:
        return FIRING
    if state == RESOLVED and notified == FIRING:
        return RESOLVED
    return None


def channels(rule: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """(channel, payload part) for every channel the rule has."""
    out: list[tuple[str, dict[str, Any]]] = []
    if rule["email_to"]:
        out.append(("email", {"recipients": list(rule["email_to"])}))
    if rule["webhook_url"]:
        out.append(("webhook", {"url": rule["webhook_url"]}))
    if rule["in_app_users"]:
        out.append(("inApp", {"recipients": list(rule["in_app_users"])}))
    return out


async def _insert_event(
    conn: AsyncConnection,
    rule: dict[str, Any],
    step: _Step,
    value: float | None,
    silence: dict[str, Any] | None,
    now: datetime,
) -> int | None:
    stmt = (
        upsert(conn, events)
        .values(
            rule_id=rule["id"],
            tenant_id=rule["tenant_id"],
            rule_name=rule["name"],
            metric=rule["metric"],
            kind=step.event,
            episode=step.episode,
            value=value,
            comparison=rule["comparison"],
            threshold=rule["threshold"],
            severity=rule["severity"],
            silenced=silence is not None,
            silence_id=None if silence is None else silence["id"],
            notified_at=None,
            notification_jobs=[],
            occurred_at=now,
        )
        .on_conflict_do_nothing(index_elements=["rule_id", "episode", "kind"])
        .returning(events.c.id)
    )
    event_id = (await conn.execute(stmt)).scalar_one_or_none()
    return None if event_id is None else int(event_id)


async def _notify(
    conn: AsyncConnection,
    ledger: LedgerDriver,
    rule: dict[str, Any],
    event_id: int,
    kind: str,
    now: datetime,
) -> list[int]:
    """Enqueue (through ``ledger``) one job per channel for ``event_id`` and mark it notified."""
    job_ids = []
    for channel, part in channels(rule):
        spec = JobSpec(
            type=ALERT_NOTIFICATION_TYPE,
            payload={
                "eventId": event_id,
                "ruleId": rule["id"],
                "kind": kind,
                "channel": channel,
                **part,
            },
            idempotency_key=f"alert-notification:{event_id}:{channel}",
            tenant_id=rule["tenant_id"],
        )
        job_ids.append((await ledger.job_insert(conn, spec, now=now)).job_id)
    await conn.execute(
        update(events)
        .where(events.c.id == event_id)
        .values(notified_at=now, notification_jobs=job_ids)
    )
    return job_ids


@dataclass
class _Plan:
    rule: dict[str, Any]
    value: float | None
    silence: dict[str, Any] | None
    step: _Step
    notified: str | None  # the episode's ``notified`` after this step
    due: str | None  # the notice owed after this step


def plan(
    rule: dict[str, Any], value: float | None, silence: dict[str, Any] | None, now: datetime
) -> _Plan | None:
    """What the pass must write for ``rule``; None when only its value changes."""
    step = next_state(rule, value, now)
    notified = None if step.event == FIRING else rule["notified"]
    due = owed(step.state, notified)
    changed = (step.state, step.since, step.episode) != (
        rule["state"],
        rule["state_since"],
        int(rule["episode"]),
    )
    if not changed and (due is None or silence is not None):
        return None
    return _Plan(rule, value, silence, step, notified, due)


class _Lost(Exception):
    """A rule changed under the evaluator; its transition is rolled back."""


async def _apply(
    conn: AsyncConnection,
    ledger: LedgerDriver,
    p: _Plan,
    now: datetime,
    summary: EvaluationSummary,
) -> None:
    """Write one planned transition (and the notice it owes) in ``conn``."""
    rule, step = p.rule, p.step
    event_id = rule["last_event_id"]
    if step.event is not None:
        event_id = await _insert_event(conn, rule, step, p.value, p.silence, now)
        if event_id is None:  # another evaluator wrote this transition
            raise _Lost()
    send = p.due is not None and p.silence is None and event_id is not None
    old_notified = rule["notified"]
    result = await conn.execute(
        update(rules)
        .where(
            rules.c.id == rule["id"],
            rules.c.state == rule["state"],
            rules.c.episode == rule["episode"],
            (
                rules.c.notified.is_(None)
                if old_notified is None
                else rules.c.notified == old_notified
            ),
            rules.c.enabled.is_(True),
        )
        .values(
            state=step.state,
            state_since=step.since,
            episode=step.episode,
            notified=p.due if send else p.notified,
            last_event_id=event_id,
            last_value=p.value,
            evaluated_at=now,
        )
    )
    if result.rowcount != 1:  # changed, disabled or deleted meanwhile: leave it be
        raise _Lost()
    if step.event is not None:
        assert event_id is not None
        (summary.fired if step.event == FIRING else summary.resolved).append(int(event_id))
        if p.silence is not None:
            summary.silenced.append(int(event_id))
    if send:
        assert event_id is not None and p.due is not None
        summary.jobs += await _notify(conn, ledger, rule, int(event_id), p.due, now)
        summary.notified.append(int(event_id))


async def _enabled_rules(conn: AsyncConnection) -> list[dict[str, Any]]:
    rows = await conn.execute(
        select(rules).where(rules.c.enabled.is_(True)).order_by(rules.c.id)
    )  # ix_workflow_alert_rules_enabled
    return [dict(r) for r in rows.mappings()]


async def evaluate_once(
    db: Database,
    clock: Clock,
    *,
    ledger: LedgerDriver,
    metrics: Mapping[str, Metric] = METRICS,
) -> EvaluationSummary:
    """One evaluator pass at ``clock.now()`` over the metrics of ``metrics``
    (see the module docstring), notification jobs enqueued through ``ledger``."""
    started = time.perf_counter()
    now = clock.now()
    summary = EvaluationSummary()
    async with db.read() as conn:
        found = await _enabled_rules(conn)
        silences = await active_silences(conn, now)
        wanted = [(r["metric"], r["tenant_id"]) for r in found]
        values = await measure(conn, wanted, now=now, table=metrics)
    quiet: list[dict[str, Any]] = []
    async with db.begin() as conn:
        for rule in found:
            value = values[(rule["metric"], rule["tenant_id"])]
            silence = next((s for s in silences if matches(s, rule, now)), None)
            summary.evaluated += 1
            planned = plan(rule, value, silence, now)
            if planned is None:
                quiet.append({"rid": rule["id"], "v": value})
                continue
            try:
                async with conn.begin_nested():
                    await _apply(conn, ledger, planned, now, summary)
            except _Lost:
                continue
        if quiet:
            await conn.execute(
                update(rules)
                .where(rules.c.id == bindparam("rid"))
                .values(last_value=bindparam("v"), evaluated_at=now),
                quiet,
            )
        states = await conn.execute(select(rules.c.state).where(rules.c.enabled.is_(True)))
        for (state,) in states:
            summary.pending += state == PENDING
            summary.firing += state == FIRING
    summary.duration_ms = round((time.perf_counter() - started) * 1000, 3)
    return summary
