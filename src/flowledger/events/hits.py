"""Subscription hits (SPEC X-5, O-10): one row per (subscription, event) that
matched, written by ``event_dispatch`` in the same transaction as the
``webhook_delivery`` job it enqueues, then kept up to date by that job:
``pending`` → ``delivered`` | ``failed`` (the latest attempt failed; the job
may still retry) | ``skipped`` (the subscription was disabled or deleted
when the delivery ran, L-4). A ``delivered`` hit is never changed again.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.dialects import upsert
from flowledger.db.event_schema import workflow_subscription_hits as hits
from flowledger.engine.queries import Page

PENDING, DELIVERED, FAILED, SKIPPED = "pending", "delivered", "failed", "skipped"
MAX_ERROR_CHARS = 2000


async def record_hit(
    conn: AsyncConnection,
    *,
    subscription_id: int,
    event: Mapping[str, Any],
    now: datetime,
) -> int | None:
    """Insert the hit of ``event`` (an outbox row) on a subscription; None
    when that hit was already recorded (the event is dispatched again)."""
    stmt = (
        upsert(conn, hits)
        .values(
            subscription_id=subscription_id,
            event_id=event["id"],
            event_type=event["event_type"],
            tenant_id=event["tenant_id"],
            instance_id=event["instance_id"],
            status=PENDING,
            created_at=now,
            updated_at=now,
        )
        .on_conflict_do_nothing(index_elements=[hits.c.subscription_id, hits.c.event_id])
        .returning(hits.c.id)
    )
    hit_id = (await conn.execute(stmt)).scalar_one_or_none()
    return None if hit_id is None else int(hit_id)


async def attach_job(conn: AsyncConnection, hit_id: int, job_id: int) -> None:
    await conn.execute(update(hits).where(hits.c.id == hit_id).values(job_id=job_id))


async def set_hit_status(
    conn: AsyncConnection,
    hit_id: int,
    status: str,
    *,
    now: datetime,
    response_status: int | None = None,
    error: str | None = None,
) -> None:
    """Record the latest delivery outcome (never overwrites ``delivered``)."""
    await conn.execute(
        update(hits)
        .where(hits.c.id == hit_id, hits.c.status != DELIVERED)
        .values(
            status=status,
            response_status=response_status,
            last_error=None if error is None else error[:MAX_ERROR_CHARS],
            updated_at=now,
        )
    )


async def get_hit(conn: AsyncConnection, hit_id: int) -> dict[str, Any] | None:
    row = (await conn.execute(select(hits).where(hits.c.id == hit_id))).mappings().first()
    return None if row is None else dict(row)


async def list_hits(
    conn: AsyncConnection,
    subscription_id: int,
    *,
    status: str | None = None,
    limit: int = 50,
    after_event_id: int | None = None,
) -> Page:
    """A subscription's hits, newest event first (keyset on the event id,
    served by the unique (subscription, event) index)."""
    query = select(hits).where(hits.c.subscription_id == subscription_id)
    if status is not None:
        query = query.where(hits.c.status == status)
    if after_event_id is not None:
        query = query.where(hits.c.event_id < after_event_id)
    query = query.order_by(hits.c.event_id.desc()).limit(limit + 1)
    rows = [dict(r) for r in (await conn.execute(query)).mappings().all()]
    if len(rows) <= limit:
        return Page(rows, None)
    return Page(rows[:limit], (rows[limit - 1]["event_id"],))
