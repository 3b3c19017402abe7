"""Signed webhook deliveries (SPEC X-5, L-4, L-17): what a ``webhook_delivery``
job sends and how it settles.

The job payload (written by ``event_dispatch``) holds the subscription and
hit ids and the event; the body is the JSON object::

    {"id": <outbox event id>, "type": "task.completed",
     "occurredAt": "2026-01-01T00:00:00+00:00", "tenantId": "default",
     "instanceId": 42, "definitionKey": "leave", "data": {...}}

sent as exactly the bytes that are signed: ``X-Flowledger-Timestamp`` (unix
seconds from the job's clock) and ``X-Flowledger-Signature`` =
``sha256=`` HMAC-SHA256(secret, ``"<timestamp>." + body``) — see
:mod:`flowledger.outbound.signing` and docs/webhooks.md for the receiver's
side — plus ``X-Flowledger-Event`` (the type), ``X-Flowledger-Delivery``
(the hit id, the same on every retry) and ``X-Idempotency-Key`` (L-16).
Events are delivered at least once; receivers dedupe on ``id``.

Settlement: the subscription is read when the job runs — disabled or
deleted → :class:`~flowledger.worker.Skip` (a ``skipped`` attempt, L-4), and
its current URL and secret are used otherwise. The POST is an unsafe write:
``call_from_job`` sets the side-effect marker before sending, so a 5xx, 408,
429 or missing answer dead-letters the job as ``external_outcome_unconfirmed``
(L-17) and a clear 4xx is an ordinary retried failure. A 2xx saves the
``webhook_delivered`` step receipt with the hit's ``delivered`` status (the
receipt confirms the write, clearing the side-effect marker): a retry after
a crash before settlement — or an operator's — finds it and sends nothing.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import structlog
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.errors import PermanentError
from flowledger.events import hits
from flowledger.events.subscriptions import get_subscription, subscription_secret
from flowledger.ledger.types import JobType
from flowledger.outbound.job_calls import OutboundRequest, call_from_job
from flowledger.outbound.resources import Outbound
from flowledger.outbound.secrets import SecretUnreadable
from flowledger.outbound.signing import sign_headers
from flowledger.states import Pool
from flowledger.worker.context import JobContext, Skip

log = structlog.get_logger("flowledger.events")

WEBHOOK_DELIVERY = "webhook_delivery"
WEBHOOK_DELIVERY_TYPE = JobType(WEBHOOK_DELIVERY, Pool.OUTBOUND, max_attempts=8)
EVENT_HEADER = "X-Flowledger-Event"
DELIVERY_HEADER = "X-Flowledger-Delivery"
DELIVERED_STEP = "webhook_delivered"
# fields of the outbox payload that the body carries at the top level
_TOP_LEVEL = frozenset({"instanceId", "definitionKey"})


def event_document(event: Mapping[str, Any]) -> dict[str, Any]:
    """The delivered JSON object of an outbox row."""
    payload = event["payload"] or {}
    return {
        "id": int(event["id"]),
        "type": event["event_type"],
        "occurredAt": event["created_at"].isoformat(),
        "tenantId": event["tenant_id"],
        "instanceId": event["instance_id"],
        "definitionKey": event["definition_key"],
        "data": {k: v for k, v in payload.items() if k not in _TOP_LEVEL},
    }


def delivery_payload(
    event: Mapping[str, Any], *, subscription_id: int, hit_id: int
) -> dict[str, Any]:
    """The payload of the ``webhook_delivery`` job of one hit."""
    return {"subscriptionId": subscription_id, "hitId": hit_id, "event": event_document(event)}


def delivery_body(document: Mapping[str, Any]) -> bytes:
    """The exact bytes sent (keys in a fixed order, compact UTF-8 JSON)."""
    ordered = {
        key: document.get(key)
        for key in ("id", "type", "occurredAt", "tenantId", "instanceId", "definitionKey", "data")
    }
    return json.dumps(ordered, ensure_ascii=False, separators=(",", ":")).encode()


def _response_status(error: BaseException) -> int | None:
    response = getattr(error, "response", None)
    status = response.get("status") if isinstance(response, dict) else None
    return status if isinstance(status, int) else None


async def _record(ctx: JobContext, hit_id: int, status: str, **values: Any) -> None:
    """Best-effort hit status write outside the job's fence (it only
    describes the delivery; ``delivered`` is never overwritten)."""
    try:
        async with ctx.db.begin() as conn:
            await hits.set_hit_status(conn, hit_id, status, now=ctx.clock.now(), **values)
    except Exception as exc:  # the settlement of the job matters more
        log.warning("hit_status_not_written", hit_id=hit_id, status=status, error=str(exc))


async def deliver_webhook(ctx: JobContext, outbound: Outbound) -> Any:
    """The ``webhook_delivery`` handler (see the module docstring), signing
    with the secret ``outbound``'s box reveals and sending through its client."""
    try:
        hit_id = int(ctx.payload["hitId"])
        subscription_id = int(ctx.payload["subscriptionId"])
        document = dict(ctx.payload["event"])
    except (KeyError, TypeError, ValueError):
        raise PermanentError(f"webhook_delivery job {ctx.job.id} has a malformed payload") from None
    async with ctx.db.read() as conn:
        found, receipt = await ctx.ledger.receipt_get(conn, ctx.job.operation_key, DELIVERED_STEP)
        subscription = None if found else await get_subscription(conn, subscription_id)
    if found:
        return receipt
    if subscription is None or not subscription["enabled"]:
        reason = "subscription deleted" if subscription is None else "subscription disabled"
        await _record(ctx, hit_id, hits.SKIPPED, error=reason)
        return Skip(reason)
    try:
        secret = subscription_secret(subscription, outbound.secrets)
    except SecretUnreadable as exc:
        await _record(ctx, hit_id, hits.FAILED, error=exc.message)
        raise PermanentError(f"subscription {subscription_id}: {exc.message}") from None
    body = delivery_body(document)
    headers = {
        "Content-Type": "application/json",
        **sign_headers(secret, int(ctx.clock.now().timestamp()), body),
        EVENT_HEADER: str(document.get("type")),
        DELIVERY_HEADER: str(hit_id),
    }
    request = OutboundRequest("POST", subscription["target_url"], headers, body)
    try:
        result = await call_from_job(ctx, request, client=outbound.client)
    except Exception as exc:
        await _record(
            ctx, hit_id, hits.FAILED, response_status=_response_status(exc), error=str(exc)
        )
        raise

    async def delivered(conn: AsyncConnection) -> dict[str, Any]:
        await hits.set_hit_status(
            conn, hit_id, hits.DELIVERED, now=ctx.clock.now(), response_status=result.status
        )
        return {"hitId": hit_id, "status": result.status}

    return await ctx.step(DELIVERED_STEP, delivered)
