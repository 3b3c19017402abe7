"""Running one automation action (SPEC X-6, L-14, L-16, L-17): what an
``automation_action`` job does with its payload.

Every action ends in one step receipt (L-14) of its job's operation —
``http_result``, ``form_write`` or ``notify`` — and every run first looks for
that receipt: a job that runs again after its success was committed (the
worker died before settling, or an operator retried it) returns the stored
result and neither sends nor writes again.

- ``http``: sent with :func:`~flowledger.outbound.job_calls.call_from_job`
  (SSRF guard, ``X-Idempotency-Key``, the L-17 side-effect marker for an
  unsafe write and its classification of failures). The URL is built with
  :func:`~flowledger.outbound.ssrf.build_url`: placeholder values are
  percent-encoded and may only fill the path, query or fragment — a rule
  stored before that was checked at save time is refused here (permanent),
  so form data can never choose where the rule's secret headers go (X-4).
  The ``secretHeaders`` are redacted, whatever their names, in the request
  stored on the attempt row. A clear 2xx stores ``{status, body}`` (the body
  cut to 2000 characters) as the receipt.
- ``updateData``: inside the receipt's transaction, with the instance row
  locked first (L-13), the form is written through the action runner's
  :func:`~flowledger.actions.runner.update_form` (validated, source
  ``automation:<ruleId>``). A finished instance is not written: the receipt
  records the skip and the attempt is ``skipped``. A value the form schema
  refuses is a permanent failure.
- ``notify``: ``inApp`` posts the messages inside the receipt's transaction;
  ``email`` and ``sms`` record the side-effect marker just before the message
  leaves (email: before ``DATA``, after the server accepted the envelope; SMS:
  ``call_from_job`` before the POST), send, then store the receipt. A failure
  before that point is retried; a send whose outcome is unknown goes to the
  L-17 dead letter and is never repeated automatically
  (:mod:`flowledger.notify.email`, :mod:`flowledger.notify.sms`).

Templates are rendered with the instance's form data as it is when the
action runs. An action whose rule was disabled or deleted after the event
is skipped.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.alias_generators import to_camel
from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.actions.runner import (
    SYSTEM_ACTOR,
    outcome,
    render_recipients,
    render_request,
    send_email_message,
    send_http,
    send_sms_message,
    update_form,
)
from flowledger.db.engine_schema import workflow_instances
from flowledger.engine.errors import InstanceNotFound
from flowledger.engine.facade import Engine
from flowledger.engine.step import JobStepLock, Step
from flowledger.errors import PermanentError
from flowledger.events.automation_rules import (
    Action,
    HttpAction,
    NotifyAction,
    UpdateDataAction,
    reveal_secret,
)
from flowledger.events.automation_store import rule_enabled
from flowledger.events.automation_templates import render_text, render_value, template_values
from flowledger.notify.messages import post_message
from flowledger.outbound.records import redacting
from flowledger.outbound.resources import Outbound
from flowledger.outbound.secrets import SecretUnreadable
from flowledger.settings import Settings
from flowledger.worker.context import JobContext, Skip

MESSAGE_KIND = "automation"
STEP_KEYS = {"http": "http_result", "updateData": "form_write", "notify": "notify"}


class AutomationJob(BaseModel):
    """The payload of an ``automation_action`` job."""

    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True)
    rule_id: int
    rule_name: str
    action_index: int
    action: Action
    event: dict[str, Any]

    @property
    def instance_id(self) -> int | None:
        value = self.event.get("instanceId")
        return None if value is None else int(value)


async def run_automation_action(
    ctx: JobContext, *, engine: Engine, settings: Settings, outbound: Outbound
) -> Any:
    """Run the action of the job of ``ctx`` (calling out through
    ``outbound``); the handler's result."""
    try:
        job = AutomationJob.model_validate(ctx.payload)
    except ValidationError as exc:
        raise PermanentError(f"not an automation job payload: {exc.errors()[0]['msg']}") from None
    step_key = STEP_KEYS[job.action.type]
    async with ctx.db.read() as conn:
        found, stored = await ctx.ledger.receipt_get(conn, ctx.job.operation_key, step_key)
        enabled = None if found else await rule_enabled(conn, job.rule_id)
    if found:
        return outcome(stored)
    if not enabled:
        state = "deleted" if enabled is None else "disabled"
        return Skip(f"automation rule {job.rule_id} was {state}")
    action = job.action
    if isinstance(action, HttpAction):
        return await _http(ctx, job, action, outbound)
    if isinstance(action, UpdateDataAction):
        return await _update_data(ctx, job, action, engine)
    return await _notify(ctx, job, action, settings, outbound)


async def _values(ctx: JobContext, job: AutomationJob) -> dict[str, Any]:
    """Template values with the instance's current form data."""
    form: Any = None
    if job.instance_id is not None:
        query = select(workflow_instances.c.form_data).where(
            workflow_instances.c.id == job.instance_id
        )
        async with ctx.db.read() as conn:
            form = (await conn.execute(query)).scalar_one_or_none()
    return template_values(job.event, form if isinstance(form, dict) else {}, ctx.clock.now())


async def _receipt(ctx: JobContext, key: str, result: Any) -> Any:
    async def store(conn: AsyncConnection) -> Any:
        return result

    return outcome(await ctx.step(key, store))


# --------------------------------------------------------------------- http


async def _http(ctx: JobContext, job: AutomationJob, action: HttpAction, outbound: Outbound) -> Any:
    values = await _values(ctx, job)
    try:
        box = outbound.secrets
        secrets = {n: reveal_secret(v, box) for n, v in action.secret_headers.items()}
    except SecretUnreadable as exc:
        raise PermanentError(f"{exc.message} (a secret header of rule {job.rule_id})") from None
    request = render_request(
        method=action.http_method,
        url=action.url,
        headers=action.headers,
        body_template=action.body_template,
        values=values,
        extra_headers=secrets,
        idempotent=action.idempotent,
        where=f" (rule {job.rule_id})",
    )
    with redacting(action.secret_headers):
        summary = await send_http(ctx, request, client=outbound.client)
    return await _receipt(ctx, STEP_KEYS["http"], summary)


# --------------------------------------------------------------- updateData


async def _update_data(
    ctx: JobContext, job: AutomationJob, action: UpdateDataAction, engine: Engine
) -> Any:
    instance_id = job.instance_id
    if instance_id is None:
        raise PermanentError(f"event {job.event.get('id')} names no instance to update")

    lock = JobStepLock(engine.store, instance_id)

    async def write(conn: AsyncConnection) -> dict[str, Any]:
        step = await engine.open_step(
            conn, instance_id, actor=SYSTEM_ACTOR, now=ctx.clock.now(), locked=lock.row
        )
        result = await update_form(
            step,
            changes,
            source=f"automation:{job.rule_id}",
            refused_by=f"automation rule {job.rule_id}",
        )
        if "skipped" in result:
            return result
        return {"instanceId": instance_id, "fields": sorted(result["fields"])}

    def changes(step: Step) -> dict[str, Any]:
        values = template_values(job.event, step.form, step.now)
        return {name: render_value(t, values) for name, t in action.field_values.items()}

    try:
        return outcome(await ctx.step(STEP_KEYS["updateData"], write, lock_first=lock))
    except InstanceNotFound as exc:
        raise PermanentError(f"automation rule {job.rule_id}: {exc.message}") from None


# ------------------------------------------------------------------- notify


async def _notify(
    ctx: JobContext,
    job: AutomationJob,
    action: NotifyAction,
    settings: Settings,
    outbound: Outbound,
) -> Any:
    values = await _values(ctx, job)
    recipients = render_recipients(action.recipients, values)
    if not recipients:
        return Skip("no recipient is left after rendering the recipients")
    title = (
        render_text(action.title, values)
        if action.title
        else f"{job.rule_name}: {job.event.get('type')}"
    )
    body = render_text(action.body_template or "", values)
    key = STEP_KEYS["notify"]
    if action.channel == "inApp":
        return await ctx.step(key, _post_messages(ctx, job, recipients, title, body))
    if action.channel == "email":
        await send_email_message(ctx, settings, to=recipients, subject=title, body=body)
        return await _receipt(ctx, key, {"channel": "email", "recipients": recipients})
    fields = {"title": title, "body": body}
    fields.update({n: render_text(t, values) for n, t in action.field_values.items()})
    assert action.template_id is not None  # checked when the rule was saved
    message_id = await send_sms_message(
        ctx,
        settings,
        template_id=action.template_id,
        recipients=recipients,
        fields=fields,
        client=outbound.client,
    )
    return await _receipt(ctx, key, {"channel": "sms", "messageId": message_id})


def _post_messages(
    ctx: JobContext, job: AutomationJob, recipients: list[str], title: str, body: str
) -> Callable[[AsyncConnection], Awaitable[dict[str, Any]]]:
    async def post(conn: AsyncConnection) -> dict[str, Any]:
        ids = [
            await post_message(
                conn,
                tenant=str(job.event["tenantId"]),
                recipient=recipient,
                title=title,
                body=body,
                kind=MESSAGE_KIND,
                now=ctx.clock.now(),
            )
            for recipient in recipients
        ]
        return {"channel": "inApp", "messageIds": ids}

    return post
