"""The one action runner of compensation (SPEC C-4) and automation (X-6)
actions (X-3, X-4, L-14, L-16, L-17).

- :func:`render_request`: an action's HTTP request from its templates —
  headers rendered (a CR/LF is a permanent failure), the body rendered with
  JSON escaping when it looks like JSON and a Content-Type implied from it,
  the URL built with :func:`~flowledger.outbound.ssrf.build_url` (values
  percent-encoded, never choosing the origin) or, for a connector, rendered
  as a path relative to the connector's base URL.
- :func:`send_http` / :func:`send_connector`: sent through
  :func:`~flowledger.outbound.job_calls.call_from_job` (SSRF guard,
  ``X-Idempotency-Key``, the L-17 marker before an unsafe write) or the
  connector (its auth, rate limit, breaker and call audit); the summary is
  ``{status, body}`` with the body cut to :data:`BODY_SUMMARY_CHARS`.
- :func:`render_recipients`, :func:`send_email_message`,
  :func:`send_sms_message`: recipients rendered, blank ones dropped and
  duplicates removed; the e-mail marker recorded just before ``DATA``; the
  SMS through the configured gateway (a missing gateway is a permanent
  failure).
- :func:`update_form`: the ``updateData`` write, inside the caller's step
  receipt with the instance locked (L-13, L-14): a finished instance's form
  is final (the write is skipped, ``{"skipped": why}``), otherwise the
  changes are written through :func:`~flowledger.engine.forms.write_form`
  (validated, with history) and a value the form refuses is a permanent
  failure.
- :func:`outcome`: a result (or a stored receipt) as the handler's answer —
  a recorded skip becomes :class:`~flowledger.worker.Skip`.
- :data:`SYSTEM_ACTOR`: who the actions act as (the engine's own actor).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any

from flowledger.definitions.templates import looks_like_json, render
from flowledger.engine.errors import FormInvalidError
from flowledger.engine.forms import write_form
from flowledger.engine.outbound_requests import HeaderInvalid, body_content_type, render_headers
from flowledger.engine.step import Step
from flowledger.engine.tasks import SYSTEM as SYSTEM_ACTOR
from flowledger.errors import ConfigurationError, PermanentError
from flowledger.notify.email import send_email
from flowledger.notify.sms import gateway_from_settings
from flowledger.outbound.attempt import CallAttempt
from flowledger.outbound.client import OutboundClient
from flowledger.outbound.connectors import call_connector
from flowledger.outbound.job_calls import OutboundRequest, call_from_job
from flowledger.outbound.resources import Outbound
from flowledger.outbound.ssrf import build_url
from flowledger.settings import Settings
from flowledger.states import TERMINAL_INSTANCE_STATUSES
from flowledger.worker import Skip

__all__ = [
    "BODY_SUMMARY_CHARS",
    "SYSTEM_ACTOR",
    "outcome",
    "render_recipients",
    "render_request",
    "send_connector",
    "send_email_message",
    "send_http",
    "send_sms_message",
    "summary",
    "update_form",
]

BODY_SUMMARY_CHARS = 2000


def render_request(
    *,
    method: str,
    url: str,
    headers: Mapping[str, str],
    body_template: str | None,
    values: Mapping[str, Any],
    connector_path: bool = False,
    extra_headers: Mapping[str, str] | None = None,
    idempotent: bool = False,
    where: str = "",
) -> OutboundRequest:
    """The rendered request; ``extra_headers`` (already plain values, such as
    revealed secrets) are added after rendering; ``where`` is appended to a
    header error (`` (rule 7)``)."""
    try:
        rendered = render_headers(headers, values)
    except HeaderInvalid as exc:
        raise PermanentError(f"{exc}{where}") from None
    rendered.update(extra_headers or {})
    body = None
    if body_template is not None:
        body = render(body_template, values, json_escape=looks_like_json(body_template))
        if not any(name.lower() == "content-type" for name in rendered):
            rendered["Content-Type"] = body_content_type(body)
    return OutboundRequest(
        method=method,
        url=render(url, values, url_encode=True) if connector_path else build_url(url, values),
        headers=rendered,
        body=None if body is None else body.encode("utf-8"),
        idempotent=idempotent,
    )


def summary(status: int, text: str) -> dict[str, Any]:
    return {"status": status, "body": text[:BODY_SUMMARY_CHARS]}


async def send_http(
    ctx: CallAttempt, request: OutboundRequest, *, client: OutboundClient
) -> dict[str, Any]:
    result = await call_from_job(ctx, request, client=client)
    return summary(result.status, result.text())


async def send_connector(
    ctx: CallAttempt,
    *,
    tenant_id: str,
    connector_key: str,
    request: OutboundRequest,
    outbound: Outbound,
) -> dict[str, Any]:
    result = await call_connector(
        ctx, tenant_id=tenant_id, connector_key=connector_key, request=request, outbound=outbound
    )
    return summary(result.status, result.text())


def render_recipients(templates: Iterable[str], values: Mapping[str, Any]) -> list[str]:
    """The rendered recipients, blanks dropped, duplicates removed (in order)."""
    rendered = (render(t, values).strip() for t in templates)
    return list(dict.fromkeys(r for r in rendered if r))


async def send_email_message(
    ctx: CallAttempt, settings: Settings, *, to: list[str], subject: str, body: str
) -> None:
    await send_email(settings, to=to, subject=subject, body=body, before_data=ctx.mark_side_effect)


async def send_sms_message(
    ctx: CallAttempt,
    settings: Settings,
    *,
    template_id: str,
    recipients: list[str],
    fields: dict[str, str],
    client: OutboundClient,
) -> str:
    """Send through the configured gateway (over ``client``); the gateway's
    message id."""
    try:
        gateway = gateway_from_settings(settings, client)
    except ConfigurationError as exc:
        raise PermanentError(exc.message) from None
    return await gateway.send(ctx, template_id, recipients, fields)


async def update_form(
    step: Step,
    changes_of: Callable[[Step], dict[str, Any]],
    *,
    source: str,
    refused_by: str,
) -> dict[str, Any]:
    """Write ``changes_of(step)`` into the form of the step's (locked)
    instance with ``source`` in its history: ``{"fields": changes}``, or
    ``{"skipped": why}`` for a finished instance (its form is final). A value
    the form refuses is a :class:`~flowledger.errors.PermanentError` naming
    ``refused_by`` (``"automation rule 7"``)."""
    status = step.instance["status"]
    if status in TERMINAL_INSTANCE_STATUSES:
        return {"skipped": f"instance {step.instance_id} is {status}; its form is final"}
    changes = changes_of(step)
    try:
        await write_form(step, changes, source=source)
    except FormInvalidError as exc:
        raise PermanentError(f"{refused_by}: {exc.message}") from None
    return {"fields": changes}


def outcome(result: Any) -> Any:
    """The handler's answer for ``result``: :class:`~flowledger.worker.Skip`
    when it records a skip (``{"skipped": why}``), else the result itself."""
    if isinstance(result, dict) and result.get("skipped"):
        return Skip(str(result["skipped"]))
    return result
