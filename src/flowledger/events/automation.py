"""Automation rules meet events (SPEC X-6): :func:`enqueue_automation` is
called by the event relay (``event_dispatch``) inside its transaction for
every outbox event it dispatches, and enqueues one ``automation_action`` job
per (rule, action, event).

Matching: the tenant's enabled rules (one indexed query — a tenant without
rules costs exactly that probe) whose ``definitionKey`` is unset or equals
the event's, whose ``eventTypes`` name the event type (or ``*``), and whose
``condition``, if any, holds. The condition sees ``form`` — the instance's
form data when the event is relayed (read once per event, only when some
matching rule has a condition) — and ``system`` (see
:mod:`flowledger.events.automation_rules`). A condition that fails to
evaluate (``"a" > 1``) counts as false and is logged: a broken rule must not
hold up the relay of the event to everyone else.

Each job carries the action as stored (secrets still encrypted) and a
snapshot of the event; its idempotencyKey ``auto:<ruleId>:<index>:<eventId>``
makes a relay that runs twice for one event (a retried ``event_dispatch``)
enqueue each job once (L-15). Jobs are attached to the event's instance
(tenant and traceId too), so they show in its job list and trace chain; they
are not advancement jobs, so the instance's suspension and cleanup do not
touch them (an ``instance.finished`` rule still runs).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_instances, workflow_trace
from flowledger.definitions.expressions import ExpressionError, compile_condition
from flowledger.events.automation_rules import matches_type
from flowledger.events.automation_store import Rule, enabled_rules
from flowledger.events.automation_templates import event_snapshot, system_values
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import JobSpec
from flowledger.ledger.types import JobType
from flowledger.states import Pool

JOB_TYPE = "automation_action"
AUTOMATION_ACTION_TYPE = JobType(JOB_TYPE, Pool.OUTBOUND)
log = structlog.get_logger("flowledger.automation")


def idempotency_key(rule_id: int, index: int, event_id: int) -> str:
    return f"auto:{rule_id}:{index}:{event_id}"


async def _form_of(conn: AsyncConnection, instance_id: int | None) -> dict[str, Any]:
    if instance_id is None:
        return {}
    query = select(workflow_instances.c.form_data).where(workflow_instances.c.id == instance_id)
    form = (await conn.execute(query)).scalar_one_or_none()
    return dict(form) if isinstance(form, dict) else {}


def _holds(rule: Rule, form: Mapping[str, Any], snapshot: Mapping[str, Any], now: datetime) -> bool:
    assert rule.condition is not None
    system = {**system_values(snapshot, now), "event": snapshot["payload"]}
    try:
        return compile_condition(rule.condition).evaluate(form, system)
    except ExpressionError as exc:
        log.warning(
            "automation_condition_failed", rule_id=rule.id, event_id=snapshot["id"], error=str(exc)
        )
        return False


async def enqueue_automation(
    conn: AsyncConnection, event: Mapping[str, Any], *, now: datetime, ledger: LedgerDriver
) -> int:
    """Enqueue (through ``ledger``) the automation jobs of one outbox event (a row of
    ``workflow_event_outbox`` as a mapping) in the caller's transaction.
    Returns how many (rule, action) pairs matched — the number of jobs that
    exist for this event afterwards, counting any a previous call created."""
    rules = await enabled_rules(
        conn, tenant=event["tenant_id"], definition_key=event.get("definition_key")
    )
    matched = [r for r in rules if matches_type(r.event_types, event["event_type"])]
    if not matched:
        return 0
    snapshot = event_snapshot(event)
    form: dict[str, Any] | None = None
    count = 0
    for rule in matched:
        if rule.condition is not None:
            if form is None:
                form = await _form_of(conn, snapshot["instanceId"])
            if not _holds(rule, form, snapshot, now):
                continue
        for index, action in enumerate(rule.actions):
            await _enqueue_action(conn, rule, index, action, snapshot, now=now, ledger=ledger)
            count += 1
    return count


async def _enqueue_action(
    conn: AsyncConnection,
    rule: Rule,
    index: int,
    action: dict[str, Any],
    snapshot: dict[str, Any],
    *,
    now: datetime,
    ledger: LedgerDriver,
) -> None:
    instance_id = snapshot["instanceId"]
    result = await ledger.job_insert(
        conn,
        JobSpec(
            type=AUTOMATION_ACTION_TYPE,
            payload={
                "ruleId": rule.id,
                "ruleName": rule.name,
                "actionIndex": index,
                "action": action,
                "event": snapshot,
            },
            idempotency_key=idempotency_key(rule.id, index, snapshot["id"]),
            trace_id=snapshot["traceId"],
            tenant_id=snapshot["tenantId"],
            instance_id=instance_id,
        ),
        now=now,
    )
    if result.created and instance_id is not None and snapshot["traceId"]:
        await conn.execute(  # the engine trace records every job it causes (E-8)
            workflow_trace.insert().values(
                instance_id=instance_id,
                trace_id=snapshot["traceId"],
                event="job_enqueued",
                job_id=result.job_id,
                detail={
                    "type": JOB_TYPE,
                    "ruleId": rule.id,
                    "actionIndex": index,
                    "eventId": snapshot["id"],
                },
                created_at=now,
            )
        )
