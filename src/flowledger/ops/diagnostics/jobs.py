"""The trigger and event-dispatch views of an instance's diagnostics (SPEC
O-10, X-1, X-2, X-5, E-10).

- **triggers**: each ``trigger_dispatch`` and ``external_dispatch`` job of
  the instance with every attempt's request, response and error (secrets
  redacted, :mod:`flowledger.ops.diagnostics.redaction`).
- **events**: the instance's outbox rows, oldest first, each with its
  dispatch job, its subscription hits and their webhook deliveries (status,
  response status, last error, the delivery job's status). The dispatch job
  of a row: while pending, the ``event_dispatch`` job keyed for the oldest
  pending row (``event_dispatch:<id>`` and its ``:after:`` successors); once
  dispatched or failed, the ``event_dispatch`` job whose attempt started
  last at or before the row's dispatch time (the dispatch marks rows with
  its attempt's clock, so that attempt is the one that took the row). A
  failed row also carries the error the dispatch recorded in the engine
  trace (``event_dispatch_failed``).

Indexes: ``ix_workflow_jobs_instance`` (jobs by instance),
``ix_workflow_event_outbox_instance``, ``ix_workflow_subscription_hits_instance``,
``uq_workflow_jobs_idempotency_key``; the dispatch job of a dispatched row is
one correlated range on ``ix_workflow_job_executions_started`` (from an
hour before the row was created to its dispatch time); a pending row's job
is found by exact idempotency-key lookups."""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import func, select, true
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_event_outbox as outbox
from flowledger.db.engine_schema import workflow_trace as trace
from flowledger.db.event_schema import workflow_subscription_hits as hits
from flowledger.db.history_partitions import earliest_attempt_start
from flowledger.db.portable import timestamp_minus
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.diagnostics.redaction import redact
from flowledger.ops.diagnostics.trace import jobs_with_attempts

TRIGGER_TYPES = ("trigger_dispatch", "external_dispatch")
EVENT_DISPATCH = "event_dispatch"
MAX_EVENTS = 1000
MAX_CHAIN = 10
# how long before its row's creation a dispatch attempt may have started
DISPATCH_SLACK = timedelta(hours=1)


async def triggers_view(conn: AsyncConnection, instance_id: int) -> list[dict[str, Any]]:
    return await jobs_with_attempts(
        conn,
        select(jobs)
        .where(jobs.c.instance_id == instance_id, jobs.c.type.in_(TRIGGER_TYPES))
        .order_by(jobs.c.id),
    )


def _job_brief(row: Any) -> dict[str, Any]:
    return {
        "id": int(row.id),
        "status": row.status,
        "attempts": row.attempts,
        "lastError": row.last_error,
        "runAt": row.run_at,
        "createdAt": row.created_at,
    }


async def _pending_dispatch_job(conn: AsyncConnection) -> dict[str, Any] | None:
    oldest = (
        await conn.execute(
            select(outbox.c.id)
            .where(outbox.c.status == "pending")
            .order_by(outbox.c.created_at, outbox.c.id)
            .limit(1)
        )
    ).scalar_one_or_none()
    if oldest is None:
        return None
    # the chain of keys of SPEC E-10 (events.outbox): exact lookups, at most 10
    key = f"{EVENT_DISPATCH}:{oldest}"
    row = None
    for _ in range(MAX_CHAIN):
        found = (await conn.execute(select(jobs).where(jobs.c.idempotency_key == key))).first()
        if found is None:
            break
        row = found
        if found.status in ("pending", "running", "paused"):
            break
        key = f"{EVENT_DISPATCH}:{oldest}:after:{found.id}"
    return None if row is None else _job_brief(row)


async def events_view(
    conn: AsyncConnection, instance_id: int, *, instance_created_at: datetime | None = None
) -> dict[str, Any]:
    """The events view; ``instance_created_at`` (the instance's, when known)
    bounds the dispatch attempts' ``started_at`` by a value, not only by the
    outbox row's columns, so PostgreSQL plans only the attempts' day
    partitions since then (planning every partition cost ~30 ms at 90 days)."""
    # the event_dispatch attempt that started last at or before the dispatch
    # time (the rows are marked with the attempt's clock, inside it)
    since = (
        executions.c.started_at >= earliest_attempt_start(instance_created_at) - DISPATCH_SLACK
        if instance_created_at is not None
        else true()
    )
    dispatcher = (
        select(executions.c.job_id)
        .select_from(executions.join(jobs, jobs.c.id == executions.c.job_id))
        .where(
            jobs.c.type == EVENT_DISPATCH,
            executions.c.started_at <= outbox.c.dispatched_at,
            executions.c.started_at >= timestamp_minus(outbox.c.created_at, DISPATCH_SLACK),
            since,
        )
        .order_by(executions.c.started_at.desc(), executions.c.id.desc())
        .limit(1)
        .correlate(outbox)
        .scalar_subquery()
    )
    rows = (
        (
            await conn.execute(
                select(outbox, dispatcher.label("dispatch_job_id"))
                .where(outbox.c.instance_id == instance_id)
                .order_by(outbox.c.id)
                .limit(MAX_EVENTS + 1)
            )
        )
        .mappings()
        .all()
    )
    total = (
        await conn.execute(
            select(func.count()).select_from(outbox).where(outbox.c.instance_id == instance_id)
        )
    ).scalar_one()
    rows = rows[:MAX_EVENTS]
    dispatch_ids = sorted({int(r["dispatch_job_id"]) for r in rows if r["dispatch_job_id"]})
    hit_rows = (
        (
            await conn.execute(
                select(hits).where(hits.c.instance_id == instance_id).order_by(hits.c.id)
            )
        )
        .mappings()
        .all()
    )
    delivery_ids = sorted({int(h["job_id"]) for h in hit_rows if h["job_id"] is not None})
    wanted = dispatch_ids + delivery_ids
    briefs: dict[int, dict[str, Any]] = {}
    if wanted:
        for row in (await conn.execute(select(jobs).where(jobs.c.id.in_(wanted)))).all():
            briefs[int(row.id)] = _job_brief(row)
    failures = {
        int((d or {}).get("eventId", 0)): (d or {}).get("error")
        for (d,) in (
            await conn.execute(
                select(trace.c.detail).where(
                    trace.c.instance_id == instance_id, trace.c.event == "event_dispatch_failed"
                )
            )
        ).all()
    }
    hits_by_event: dict[int, list[dict[str, Any]]] = {}
    for h in hit_rows:
        hits_by_event.setdefault(int(h["event_id"]), []).append(
            {
                "id": int(h["id"]),
                "subscriptionId": int(h["subscription_id"]),
                "status": h["status"],
                "responseStatus": h["response_status"],
                "lastError": h["last_error"],
                "delivery": briefs.get(int(h["job_id"])) if h["job_id"] is not None else None,
                "createdAt": h["created_at"],
                "updatedAt": h["updated_at"],
            }
        )
    pending_job = (
        await _pending_dispatch_job(conn) if any(r["status"] == "pending" for r in rows) else None
    )
    items = []
    for r in rows:
        if r["status"] == "pending":
            dispatch = pending_job
        else:
            dispatch = briefs.get(int(r["dispatch_job_id"])) if r["dispatch_job_id"] else None
        items.append(
            {
                "id": int(r["id"]),
                "eventType": r["event_type"],
                "status": r["status"],
                "payload": redact(r["payload"]),
                "createdAt": r["created_at"],
                "dispatchedAt": r["dispatched_at"],
                "error": failures.get(int(r["id"])),
                "dispatchJob": dispatch,
                "hits": hits_by_event.get(int(r["id"]), []),
            }
        )
    return {"items": items, "total": int(total), "truncated": int(total) > MAX_EVENTS}
