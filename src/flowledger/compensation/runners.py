"""Running one compensation action (SPEC C-4, C-5, C-6): what a
``compensation_action`` job does with the action document in its payload.

Templates ``{{form.<field>}}``, ``{{instanceId}}``, ``{{nodeKey}}`` and
``{{error}}`` are rendered from the instance's form data **as it is when the
job runs** (C-5), values percent-encoded inside URLs (X-4).

- ``http``: :func:`~flowledger.outbound.job_calls.call_from_job` — SSRF
  guard, no redirects, ``X-Idempotency-Key``, the L-17 side-effect marker
  for an unsafe write and its classification (an unknown outcome goes to the
  ``external_outcome_unconfirmed`` dead letter, never resent: C-6).
- ``connector``: ``flowledger.outbound.connectors.call_connector`` with the
  connector's own auth, rate limit, circuit breaker and call audit (X-3).
- ``sms``: the configured gateway (``templateId``, rendered ``recipients``
  and ``fieldValues``), sent through ``call_from_job`` like ``http`` (marker
  before the POST, request/response on the attempt row, L-17 classification);
  ``email``: SMTP with the fixed subject
  :data:`~flowledger.notify.email.COMPENSATION_SUBJECT` and the rendered
  ``bodyTemplate``, the marker recorded just before ``DATA``. A failure before
  the message leaves is retried; a send whose outcome is unknown goes to the
  ``external_outcome_unconfirmed`` dead letter and is not repeated
  automatically (C-6).
- ``updateData``: inside the result's step receipt (L-14, C-6), the instance
  row locked first, each of ``fieldKeys`` gets its ``fieldValues`` template
  rendered as text — an unconfigured value writes null — through the action
  runner's :func:`~flowledger.actions.runner.update_form` (validated, source
  ``compensation:<ticketId>``). Text is converted to the field's declared
  type when it reads as one (``"12"`` into a number field is 12; empty text
  into a non-string field is null); a value the form still refuses is a
  permanent failure. The form of a finished instance is final: the action
  is skipped.

Every external action stores its result as a step receipt right after the
call returns, together with the ticket's ``succeeded`` (see
:mod:`flowledger.handlers.compensation_jobs`), so a job that runs again after
a crash returns the stored result instead of calling again.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.actions.runner import (
    SYSTEM_ACTOR,
    render_recipients,
    render_request,
    send_connector,
    send_email_message,
    send_http,
    send_sms_message,
    update_form,
)
from flowledger.db.engine_schema import workflow_instances
from flowledger.definitions.model import CompensationAction, FormSchema
from flowledger.definitions.templates import render
from flowledger.engine.facade import Engine
from flowledger.engine.step import Step
from flowledger.errors import PermanentError
from flowledger.notify.email import COMPENSATION_SUBJECT
from flowledger.outbound.job_calls import OutboundRequest
from flowledger.outbound.resources import Outbound
from flowledger.settings import Settings
from flowledger.worker.context import JobContext

DEFAULT_EMAIL_BODY = (
    "The compensation of node {{nodeKey}} of process instance {{instanceId}} needs attention.\n"
    "Error: {{error}}\n"
)


@dataclass(frozen=True)
class ActionRun:
    """What one run needs besides the job context."""

    ticket_id: int
    instance_id: int
    tenant_id: str
    node_key: str
    error: str | None
    action: CompensationAction


def template_values(
    form: Mapping[str, Any], instance_id: int, node_key: str, error: str | None
) -> dict[str, Any]:
    return {"form": dict(form), "instanceId": instance_id, "nodeKey": node_key, "error": error}


async def _values(ctx: JobContext, run: ActionRun) -> dict[str, Any]:
    async with ctx.db.read() as conn:
        form = (
            await conn.execute(
                select(workflow_instances.c.form_data).where(
                    workflow_instances.c.id == run.instance_id
                )
            )
        ).scalar_one_or_none()
    return template_values(
        form if isinstance(form, dict) else {}, run.instance_id, run.node_key, run.error
    )


def http_request(action: CompensationAction, values: Mapping[str, Any]) -> OutboundRequest:
    """The rendered request of an ``http`` or ``connector`` action."""
    assert action.url is not None  # the action model requires it for both types
    return render_request(
        method=action.http_method,
        url=action.url,
        headers=action.headers,
        body_template=action.body_template,
        values=values,
        connector_path=action.type == "connector",
    )


def _recipients(templates: list[str], values: Mapping[str, Any]) -> list[str]:
    recipients = render_recipients(templates, values)
    if not recipients:
        raise PermanentError("no recipient is left after rendering the recipients")
    return recipients


async def call_external(
    ctx: JobContext, run: ActionRun, settings: Settings, outbound: Outbound
) -> dict[str, Any]:
    """Run an http / connector / sms / email action (through the shared
    action runner, :mod:`flowledger.actions.runner`, calling out through
    ``outbound``); its result summary."""
    action = run.action
    values = await _values(ctx, run)
    if action.type == "http":
        request = http_request(action, values)
        return {"type": "http", **await send_http(ctx, request, client=outbound.client)}
    if action.type == "connector":
        assert action.connector_id is not None  # the action model requires it
        result = await send_connector(
            ctx,
            tenant_id=run.tenant_id,
            connector_key=action.connector_id,
            request=http_request(action, values),
            outbound=outbound,
        )
        return {"type": "connector", **result}
    recipients = _recipients(action.recipients, values)
    if action.type == "sms":
        fields = {name: render(t or "", values) for name, t in action.field_values.items()}
        assert action.template_id is not None  # the action model requires it
        message_id = await send_sms_message(
            ctx,
            settings,
            template_id=action.template_id,
            recipients=recipients,
            fields=fields,
            client=outbound.client,
        )
        return {"type": "sms", "recipients": recipients, "messageId": message_id}
    if action.type == "email":
        body = render(action.body_template or DEFAULT_EMAIL_BODY, values)
        await send_email_message(
            ctx, settings, to=recipients, subject=COMPENSATION_SUBJECT, body=body
        )
        return {"type": "email", "recipients": recipients}
    raise PermanentError(f"{action.type} is not an external action")  # pragma: no cover


_NUMBER_TYPES = {"number": float, "integer": int}


def _typed(text: str, field_type: str | None) -> Any:
    """Rendered text as the value of a field of ``field_type`` (see module doc)."""
    if field_type in (None, "string"):
        return text
    if text == "":
        return None
    if field_type == "date":
        return text
    try:
        if field_type == "boolean":
            lowered = text.strip().lower()
            return {"true": True, "false": False}.get(lowered, text)
        if field_type in ("object", "array"):
            return json.loads(text)
        if field_type == "integer":
            return int(text.strip())
        number = float(text.strip())
        return int(number) if number.is_integer() and "." not in text else number
    except ValueError:
        return text  # the form validation names the field and the type


def form_changes(
    action: CompensationAction, schema: FormSchema, values: Mapping[str, Any]
) -> dict[str, Any]:
    """``fieldKeys`` with their rendered ``fieldValues`` (null when unconfigured)."""
    types = {f.key: f.type for f in schema.fields}
    changes: dict[str, Any] = {}
    for key in action.field_keys:
        template = action.field_values.get(key)
        changes[key] = (
            None if template is None else _typed(render(template, values), types.get(key))
        )
    return changes


async def update_data(
    conn: AsyncConnection, ctx: JobContext, run: ActionRun, engine: Engine
) -> dict[str, Any]:
    """The updateData write, in the receipt's transaction (instance locked
    first), through the one action runner's :func:`update_form`."""
    step = await engine.open_step(conn, run.instance_id, actor=SYSTEM_ACTOR, now=ctx.clock.now())

    def changes(step: Step) -> dict[str, Any]:
        values = template_values(step.form, run.instance_id, run.node_key, run.error)
        return form_changes(run.action, step.defn.form, values)

    result = await update_form(
        step,
        changes,
        source=f"compensation:{run.ticket_id}",
        refused_by=f"updateData of ticket {run.ticket_id}",
    )
    return {"type": "updateData", **result}
