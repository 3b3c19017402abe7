"""Handler of ``alert_notification`` jobs (SPEC O-22, L-14, L-17): one
channel's notice of one alert event, enqueued by the evaluator
(:mod:`flowledger.ops.alerts.evaluator`) in the transaction of the state
change.

- ``email``: one message to every recipient through SMTP
  (:func:`~flowledger.notify.email.send_email`); the side-effect marker is
  set just before DATA, so an SMTP server that is down or refuses before
  DATA leaves a retrying job, and one that fails after DATA the L-17 dead
  letter (it may have been delivered).
- ``webhook``: a signed POST (:mod:`flowledger.ops.alerts.notices`) through
  the outbound client and its SSRF guard. It is declared idempotent: the
  receiver dedupes on ``X-Flowledger-Delivery`` (the event id) and
  ``X-Idempotency-Key``, so a 5xx or a timeout is retried with backoff
  rather than dead-lettered — an alert that may arrive twice beats one
  that never does. The secret is read from the rule when the job runs; a
  deleted rule's webhook is skipped.
- ``inApp``: one in-app message per user, written in a step receipt.
  Messages of an overall rule (no tenant) go to the ``default`` tenant.

Every channel saves the ``alert_notified`` step receipt once it is done, so
a re-run after a crash before settlement sends nothing twice.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.alert_schema import workflow_alert_events as events
from flowledger.errors import PermanentError
from flowledger.notify.email import send_email
from flowledger.notify.messages import post_message
from flowledger.ops.alerts import notices
from flowledger.ops.alerts.evaluator import ALERT_NOTIFICATION_TYPE
from flowledger.ops.alerts.rules import get_rule
from flowledger.outbound.job_calls import OutboundRequest, call_from_job
from flowledger.outbound.resources import Outbound
from flowledger.outbound.secrets import SecretUnreadable
from flowledger.outbound.signing import sign_headers
from flowledger.settings import Settings
from flowledger.worker import JobContext, Skip
from flowledger.worker.registry import Handler, define_handler

DONE_STEP = "alert_notified"
EVENT_HEADER = "X-Flowledger-Event"
DELIVERY_HEADER = "X-Flowledger-Delivery"
OVERALL_MESSAGE_TENANT = "default"


async def _receipt(ctx: JobContext, result: dict[str, Any]) -> Any:
    async def store(conn: AsyncConnection) -> dict[str, Any]:
        return result

    return await ctx.step(DONE_STEP, store)


async def _webhook(ctx: JobContext, event: dict[str, Any], url: str, outbound: Outbound) -> Any:
    async with ctx.db.read() as conn:
        rule = await get_rule(conn, int(event["rule_id"]))
    if rule is None or not rule["webhook_secret_encrypted"]:
        return Skip("the alert rule or its webhook was deleted")
    try:
        secret = outbound.secrets.decrypt(str(rule["webhook_secret_encrypted"]))
    except SecretUnreadable as exc:
        raise PermanentError(f"alert rule {rule['id']}: {exc.message}") from None
    body = notices.webhook_body(event)
    headers = {
        "Content-Type": "application/json",
        **sign_headers(secret, int(ctx.clock.now().timestamp()), body),
        EVENT_HEADER: f"alert.{event['kind']}",
        DELIVERY_HEADER: str(event["id"]),
    }
    request = OutboundRequest("POST", url, headers, body, idempotent=True)
    result = await call_from_job(ctx, request, client=outbound.client)
    return await _receipt(ctx, {"channel": "webhook", "status": result.status})


async def _in_app(ctx: JobContext, event: dict[str, Any], recipients: list[str]) -> Any:
    async def post(conn: AsyncConnection) -> dict[str, Any]:
        ids = [
            await post_message(
                conn,
                tenant=event["tenant_id"] or OVERALL_MESSAGE_TENANT,
                recipient=user,
                title=notices.subject(event),
                body=notices.text(event),
                kind=notices.MESSAGE_KIND,
                now=ctx.clock.now(),
            )
            for user in recipients
        ]
        return {"channel": "inApp", "messageIds": ids}

    return await ctx.step(DONE_STEP, post)


async def alert_notification(ctx: JobContext, settings: Settings, outbound: Outbound) -> Any:
    payload = ctx.payload
    try:
        event_id = int(payload["eventId"])
        channel = str(payload["channel"])
    except (KeyError, TypeError, ValueError):
        raise PermanentError(f"alert_notification job {ctx.job.id}: malformed payload") from None
    async with ctx.db.read() as conn:
        found, receipt = await ctx.ledger.receipt_get(conn, ctx.job.operation_key, DONE_STEP)
        row = (
            None
            if found
            else (await conn.execute(select(events).where(events.c.id == event_id)))
            .mappings()
            .first()
        )
    if found:
        return receipt
    if row is None:
        raise PermanentError(f"alert event {event_id} does not exist")
    event = dict(row)
    if channel == "email":
        recipients = [str(r) for r in payload.get("recipients") or []]
        await send_email(
            settings,
            to=recipients,
            subject=notices.subject(event),
            body=notices.text(event),
            before_data=ctx.mark_side_effect,
        )
        return await _receipt(ctx, {"channel": "email", "recipients": recipients})
    if channel == "webhook":
        return await _webhook(ctx, event, str(payload["url"]), outbound)
    if channel == "inApp":
        return await _in_app(ctx, event, [str(r) for r in payload.get("recipients") or []])
    raise PermanentError(f"alert_notification job {ctx.job.id}: unknown channel {channel!r}")


def handlers(settings: Settings, outbound: Outbound) -> list[Handler]:
    """``alert_notification``, sending e-mail with ``settings`` and webhooks
    through ``outbound``."""

    async def handler(ctx: JobContext) -> Any:
        return await alert_notification(ctx, settings, outbound)

    return [define_handler(ALERT_NOTIFICATION_TYPE, handler)]
