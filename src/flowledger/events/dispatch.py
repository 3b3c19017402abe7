"""The body of an ``event_dispatch`` job (SPEC E-10, X-5, X-6): fan a batch
of outbox events out to subscriptions and automation rules.

In the job's step-receipt transaction, :func:`dispatch_pending` first marks
the oldest pending outbox rows (at most :data:`BATCH_SIZE`; SKIP LOCKED on
PostgreSQL) ``dispatched`` in one statement when no live subscription and
no enabled automation rule exists in any tenant — the check is in the same
statement as the rows' locks; the payloads are not read, nothing is matched
(issue 15). Otherwise it takes the oldest pending rows the same way, loads
the enabled subscriptions of their tenants once, and for each event, inside
a savepoint:

- for every matching subscription (tenant, event types, definition filter),
  records the hit (UNIQUE per subscription and event, so a re-dispatched
  event creates nothing twice) and enqueues its ``webhook_delivery`` job —
  idempotency key ``webhook_delivery:<hit id>``, with the event's tenant,
  instance and traceId, and the payload's ``nodeKey`` as the job's node key
  (Saga rollback, C-7, finds delivered webhooks of a node by it);
- lets automation rules enqueue their actions (``enqueue_automation``).

The rows become ``dispatched``. An event whose fan-out raises anything but a
database connection or concurrency error becomes ``failed`` instead (its
savepoint rolled back, the error in the job's result and in the instance's
engine trace as ``event_dispatch_failed``) so one poisonous event cannot
block the outbox; a connection-level error fails the whole job, which the
ledger retries with nothing committed. A full batch enqueues the next job
(:func:`~flowledger.events.outbox.ensure_dispatch_job`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

import structlog
from sqlalchemy import ColumnElement, and_
from sqlalchemy.exc import DBAPIError, InterfaceError, OperationalError
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_trace
from flowledger.events import hits, outbox
from flowledger.events.automation import enqueue_automation
from flowledger.events.automation_store import any_enabled_rule, tenants_with_rules
from flowledger.events.subscriptions import (
    any_live_subscription,
    enabled_subscriptions,
    matches,
)
from flowledger.events.webhooks import WEBHOOK_DELIVERY, WEBHOOK_DELIVERY_TYPE, delivery_payload
from flowledger.ledger.driver.protocol import LedgerDriver
from flowledger.ledger.models import JobSpec

log = structlog.get_logger("flowledger.events")

BATCH_SIZE = 200
MAX_ERROR_CHARS = 1000


@dataclass
class DispatchReport:
    events: int = 0
    hits: int = 0
    automation_jobs: int = 0
    failed: list[dict[str, Any]] = field(default_factory=list)
    next_job_id: int | None = None

    def as_result(self) -> dict[str, Any]:
        result: dict[str, Any] = {
            "events": self.events,
            "hits": self.hits,
            "automationJobs": self.automation_jobs,
        }
        if self.failed:
            result["failed"] = self.failed
        if self.next_job_id is not None:
            result["nextJobId"] = self.next_job_id
        return result


def _transient(exc: Exception) -> bool:
    """Errors that say nothing about the event: retry the whole job."""
    if isinstance(exc, OperationalError | InterfaceError):
        return True
    return isinstance(exc, DBAPIError) and exc.connection_invalidated


def _saga_node_key(event: Mapping[str, Any]) -> str | None:
    """The node a delivery is attributed to. Saga rollback (C-7) compensates
    the nodes of succeeded webhook deliveries, so a delivery about a failure
    (``node.failed``, ``trigger.failed``, ``external.dispatch_failed``) names
    no node: announcing a failure did nothing that needs undoing."""
    event_type = str(event["event_type"])
    if event_type.endswith("failed"):
        return None
    node_key = (event["payload"] or {}).get("nodeKey")
    return str(node_key) if node_key else None


async def _fan_out(
    conn: AsyncConnection,
    event: Mapping[str, Any],
    subscriptions: list[dict[str, Any]],
    *,
    now: datetime,
    ledger: LedgerDriver,
) -> int:
    """Record the hits of one event and enqueue their deliveries."""
    node_key = _saga_node_key(event)
    count = 0
    for subscription in subscriptions:
        if not matches(subscription, event["event_type"], event["definition_key"]):
            continue
        hit_id = await hits.record_hit(
            conn, subscription_id=subscription["id"], event=event, now=now
        )
        if hit_id is None:
            continue
        job = await ledger.job_insert(
            conn,
            JobSpec(
                type=WEBHOOK_DELIVERY_TYPE,
                payload=delivery_payload(event, subscription_id=subscription["id"], hit_id=hit_id),
                idempotency_key=f"{WEBHOOK_DELIVERY}:{hit_id}",
                trace_id=event["trace_id"],
                tenant_id=event["tenant_id"],
                instance_id=event["instance_id"],
                node_key=node_key if isinstance(node_key, str) else None,
            ),
            now=now,
        )
        await hits.attach_job(conn, hit_id, job.job_id)
        count += 1
    return count


async def _trace_failure(
    conn: AsyncConnection, event: Mapping[str, Any], error: str, *, now: datetime
) -> None:
    if event["instance_id"] is None:
        return
    await conn.execute(
        workflow_trace.insert().values(
            instance_id=event["instance_id"],
            trace_id=event["trace_id"],
            event="event_dispatch_failed",
            detail={"eventId": event["id"], "eventType": event["event_type"], "error": error},
            created_at=now,
        )
    )


def nobody_listens() -> ColumnElement[bool]:
    """No live subscription and no enabled automation rule, in any tenant:
    every event is dispatched with nothing to write."""
    return and_(~any_live_subscription(), ~any_enabled_rule())


async def dispatch_pending(
    conn: AsyncConnection, *, now: datetime, ledger: LedgerDriver, limit: int = BATCH_SIZE
) -> DispatchReport:
    """Dispatch one batch in the caller's transaction (see the module
    docstring), its jobs enqueued through ``ledger``."""
    report = DispatchReport()
    unheard = await outbox.settle_unheard(conn, limit, now=now, nobody_listens=nobody_listens())
    if unheard:  # no subscription or rule anywhere: nothing to fan out
        report.events = len(unheard)
        if len(unheard) == limit:
            report.next_job_id = await outbox.ensure_dispatch_job(conn, now=now, ledger=ledger)
        return report
    events = await outbox.take_pending(conn, limit)
    if not events:
        return report
    tenants = {e["tenant_id"] for e in events}
    subscriptions = await enabled_subscriptions(conn, tenants)
    with_rules = await tenants_with_rules(conn, tenants)
    dispatched: list[int] = []
    failed: list[int] = []
    for event in events:
        tenant_subscriptions = subscriptions[event["tenant_id"]]
        wanted = any(
            matches(s, event["event_type"], event["definition_key"]) for s in tenant_subscriptions
        )
        if not wanted and event["tenant_id"] not in with_rules:
            dispatched.append(event["id"])  # nobody listens: nothing to write
            continue
        try:
            async with conn.begin_nested():
                found = await _fan_out(
                    conn, event, subscriptions[event["tenant_id"]], now=now, ledger=ledger
                )
                enqueued = await enqueue_automation(conn, event, now=now, ledger=ledger)
        except Exception as exc:
            if _transient(exc):
                raise
            error = f"{type(exc).__name__}: {exc}"[:MAX_ERROR_CHARS]
            log.warning("event_dispatch_failed", event_id=event["id"], error=error)
            report.failed.append({"eventId": event["id"], "error": error})
            failed.append(event["id"])
            await _trace_failure(conn, event, error, now=now)
            continue
        dispatched.append(event["id"])
        report.hits += found
        report.automation_jobs += enqueued
    await outbox.mark(conn, dispatched, "dispatched", now=now)
    await outbox.mark(conn, failed, "failed", now=now)
    report.events = len(dispatched)
    if len(events) == limit:
        report.next_job_id = await outbox.ensure_dispatch_job(conn, now=now, ledger=ledger)
    return report
