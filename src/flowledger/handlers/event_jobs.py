"""Handlers of event_dispatch and webhook_delivery (SPEC X-5, L-4, L-17).

``event_dispatch`` runs one batch of :func:`~flowledger.events.dispatch.
dispatch_pending` inside a fenced step receipt (L-14): a retry after a crash
between commit and settlement reuses the receipt and dispatches nothing
twice; a batch with nothing pending is a ``skipped`` attempt.
``webhook_delivery`` is :func:`~flowledger.events.webhooks.deliver_webhook`.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.events.dispatch import dispatch_pending
from flowledger.events.outbox import EVENT_DISPATCH, EVENT_DISPATCH_TYPE
from flowledger.events.webhooks import WEBHOOK_DELIVERY_TYPE, deliver_webhook
from flowledger.outbound.resources import Outbound
from flowledger.worker import JobContext, Skip
from flowledger.worker.registry import Handler, define_handler


async def event_dispatch(ctx: JobContext) -> Any:
    async def run(conn: AsyncConnection) -> dict[str, Any]:
        report = await dispatch_pending(conn, now=ctx.clock.now(), ledger=ctx.ledger)
        return report.as_result()

    result = await ctx.step(EVENT_DISPATCH, run)
    if isinstance(result, dict) and not result.get("events") and not result.get("failed"):
        return Skip("no pending events")
    return result


def handlers(outbound: Outbound) -> list[Handler]:
    """``event_dispatch`` and ``webhook_delivery`` (through ``outbound``)."""

    async def webhook_delivery(ctx: JobContext) -> Any:
        return await deliver_webhook(ctx, outbound)

    return [
        define_handler(EVENT_DISPATCH_TYPE, event_dispatch),
        define_handler(WEBHOOK_DELIVERY_TYPE, webhook_delivery),
    ]
