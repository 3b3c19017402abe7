"""SMS (SPEC X-7, C-4) through a pluggable gateway.

:class:`SmsGateway` is the interface: ``send(template_id, recipients,
field_values)`` returns the gateway's message id. :class:`HttpSmsGateway`
is the one real implementation: it POSTs JSON ``{"templateId",
"recipients", "fieldValues"}`` with ``Authorization: Bearer <token>`` to the
configured URL through the SSRF-guarded outbound client
(:mod:`flowledger.outbound.client`), and expects a 2xx JSON answer carrying
``{"id": "..."}``.

Endings: 2xx with an id → the id; 408 / 429, 5xx, no connection or no
answer in time → :class:`~flowledger.errors.RetryableError`; any other
4xx, a redirect, or a 2xx without an id → :class:`~flowledger.errors.PermanentError`.
A target the SSRF policy refuses raises ``OutboundRefused`` (permanent).
Note that a retry after a timeout may send the SMS twice if the gateway had
accepted it; gateways that de-duplicate can use ``X-Idempotency-Key``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Protocol

import httpx

from flowledger.errors import ConfigurationError, PermanentError, RetryableError
from flowledger.outbound.client import OutboundClient, OutboundResponse, shared_client
from flowledger.settings import Settings

_RETRYABLE_4XX = frozenset({408, 429})
_DETAIL_CHARS = 200


class SmsGateway(Protocol):
    """Sends one templated SMS to some recipients."""

    async def send(
        self, template_id: str, recipients: list[str], field_values: dict[str, str]
    ) -> str:
        """Send and return the gateway's message id."""
        ...


def _detail(response: OutboundResponse) -> str:
    text = response.body[:_DETAIL_CHARS].decode("utf-8", "replace")
    return f"SMS gateway answered {response.status}: {text}"


def _message_id(response: OutboundResponse) -> str:
    try:
        data = json.loads(response.body)
    except ValueError:
        data = None
    value = data.get("id") if isinstance(data, dict) else None
    if isinstance(value, bool) or not isinstance(value, str | int) or value == "":
        # accepted but unidentifiable: resending could duplicate the SMS
        raise PermanentError(f"{_detail(response)} (no message id)")
    return str(value)


class HttpSmsGateway:
    """The HTTP gateway; ``client`` defaults to the process's shared
    outbound client (resolved at send time, on the running loop)."""

    def __init__(self, url: str, token: str, client: OutboundClient | None = None) -> None:
        if not url:
            raise ConfigurationError("the SMS gateway URL is empty", field="sms_gateway_url")
        self.url = url
        self._token = token
        self._client = client

    def __repr__(self) -> str:  # never show the token
        return f"HttpSmsGateway(url={self.url!r})"

    async def send(
        self,
        template_id: str,
        recipients: Sequence[str],
        field_values: Mapping[str, str],
        *,
        idempotency_key: str | None = None,
    ) -> str:
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
        if idempotency_key:
            headers["X-Idempotency-Key"] = idempotency_key
        client = self._client or shared_client()
        try:
            response = await client.send("POST", self.url, headers=headers, content=body)
        except httpx.TimeoutException as exc:
            raise RetryableError(f"SMS gateway timed out: {type(exc).__name__}") from None
        except httpx.TransportError as exc:
            raise RetryableError(f"SMS gateway unreachable: {type(exc).__name__}: {exc}") from None
        status = response.status
        if 200 <= status < 300:
            return _message_id(response)
        if status >= 500 or status in _RETRYABLE_4XX:
            raise RetryableError(_detail(response))
        raise PermanentError(_detail(response))


def gateway_from_settings(settings: Settings, client: OutboundClient | None = None) -> SmsGateway:
    """The configured gateway (``sms_gateway_url`` / ``sms_gateway_token``);
    ConfigurationError when no gateway URL is set."""
    if not settings.sms_gateway_url:
        raise ConfigurationError(
            "no SMS gateway configured (FLOWLEDGER_SMS_GATEWAY_URL)", field="sms_gateway_url"
        )
    return HttpSmsGateway(settings.sms_gateway_url, settings.sms_gateway_token, client)
