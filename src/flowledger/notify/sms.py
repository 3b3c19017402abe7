"""SMS (SPEC X-7, C-4, L-17) through a pluggable gateway, sent from a job.

:class:`SmsGateway` is the interface: ``send(ctx, template_id, recipients,
field_values)`` sends on behalf of the job of ``ctx`` and returns the
gateway's message id. Every SMS is sent by a job (an ``automation_action``
or a ``compensation_action``); there is no path outside a job.

:class:`HttpSmsGateway` is the one real implementation: it POSTs JSON
``{"templateId", "recipients", "fieldValues"}`` with ``Authorization: Bearer
<token>`` to the configured URL through
:func:`~flowledger.outbound.job_calls.call_from_job`, and expects a 2xx JSON
answer carrying ``{"id": "..."}``. So the request and the response are stored
on the attempt row (the token redacted), the call carries
``X-Idempotency-Key``, and the POST is an unsafe write: the side-effect marker
is recorded before sending and L-17 decides how a failure ends —

- 2xx with an id → the id; 2xx without one → :class:`PermanentError` (the
  gateway took it, so a resend could duplicate the SMS);
- 408 / 429 / 5xx, no answer, a reset after sending, or the job aborted
  mid-call → ``CallUnconfirmed`` (dead, ``external_outcome_unconfirmed``,
  never resent automatically: the operator checks the gateway);
- any other 4xx → ``ClearFailure``, the ordinary failure retried with backoff
  (the gateway refused, nothing was sent);
- not connected (refused, connect timeout) → ``CallFailed`` (retried);
- a redirect → permanent; a target the SSRF policy refuses →
  ``OutboundRefused`` (permanent, nothing sent).

Another gateway plugged in must keep the same promise: mark the side effect
before sending and never report an unknown outcome as retryable.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Protocol

from flowledger.errors import ConfigurationError, PermanentError
from flowledger.outbound.attempt import CallAttempt
from flowledger.outbound.client import OutboundClient
from flowledger.outbound.job_calls import OutboundRequest, OutboundResult, call_from_job
from flowledger.outbound.resources import Outbound
from flowledger.settings import Settings

_DETAIL_CHARS = 200


class SmsGateway(Protocol):
    """Sends one templated SMS to some recipients on behalf of a job."""

    async def send(
        self,
        ctx: CallAttempt,
        template_id: str,
        recipients: Sequence[str],
        field_values: Mapping[str, str],
    ) -> str:
        """Send and return the gateway's message id."""
        ...


def _message_id(result: OutboundResult) -> str:
    try:
        data = result.json()
    except ValueError:
        data = None
    value = data.get("id") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        # accepted but unidentifiable: resending could duplicate the SMS
        text = result.body[:_DETAIL_CHARS].decode("utf-8", "replace")
        raise PermanentError(f"SMS gateway answered {result.status} without a message id: {text}")
    return str(value)


class HttpSmsGateway:
    """The HTTP gateway, sending through ``client``: an outbound client, or
    a runtime's :class:`~flowledger.outbound.resources.Outbound` (its client
    of the running loop, resolved at send time)."""

    def __init__(self, url: str, token: str, client: OutboundClient | Outbound) -> None:
        if not url:
            raise ConfigurationError("the SMS gateway URL is empty", field="sms_gateway_url")
        self.url = url
        self._token = token
        self._client = client

    def __repr__(self) -> str:  # never show the token
        return f"HttpSmsGateway(url={self.url!r})"

    def request(
        self, template_id: str, recipients: Sequence[str], field_values: Mapping[str, str]
    ) -> OutboundRequest:
        """The gateway call for one SMS; PermanentError for an incomplete SMS."""
        if not template_id:
            raise PermanentError("an SMS needs a templateId")
        if not recipients:
            raise PermanentError("an SMS needs at least one recipient")
        body = json.dumps(
            {
                "templateId": template_id,
                "recipients": list(recipients),
                "fieldValues": dict(field_values),
            },
            ensure_ascii=False,
        ).encode("utf-8")
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._token:
            headers["Authorization"] = f"Bearer {self._token}"
        return OutboundRequest("POST", self.url, headers=headers, body=body)

    async def send(
        self,
        ctx: CallAttempt,
        template_id: str,
        recipients: Sequence[str],
        field_values: Mapping[str, str],
    ) -> str:
        request = self.request(template_id, recipients, field_values)
        client = self._client.client if isinstance(self._client, Outbound) else self._client
        result = await call_from_job(ctx, request, client=client)
        return _message_id(result)


def gateway_from_settings(settings: Settings, client: OutboundClient | Outbound) -> SmsGateway:
    """The configured gateway (``sms_gateway_url`` / ``sms_gateway_token``);
    ConfigurationError when no gateway URL is set."""
    if not settings.sms_gateway_url:
        raise ConfigurationError(
            "no SMS gateway configured (FLOWLEDGER_SMS_GATEWAY_URL)", field="sms_gateway_url"
        )
    return HttpSmsGateway(settings.sms_gateway_url, settings.sms_gateway_token, client)
