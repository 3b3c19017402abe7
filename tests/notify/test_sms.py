"""SMS through the HTTP gateway (SPEC X-7, C-4): a real local HTTP server
checks the bearer token and the JSON body; 2xx → the gateway's id, 4xx →
PermanentError, 5xx / timeout → RetryableError. The outbound client is
allow-listed for that server's port only."""

from __future__ import annotations

import pytest

from flowledger.errors import ConfigurationError, PermanentError, RetryableError
from flowledger.notify.sms import HttpSmsGateway, SmsGateway, gateway_from_settings
from flowledger.outbound.client import OutboundClient
from flowledger.outbound.ssrf import OutboundRefused
from flowledger.settings import Settings
from tests.notify.servers import SmsGatewayServer


def _client(server: SmsGatewayServer, **settings: float) -> OutboundClient:
    return OutboundClient(Settings(outbound_allow=server.endpoint, **settings))


async def test_send_posts_json_with_bearer_and_returns_id(gateway: SmsGatewayServer) -> None:
    client = _client(gateway)
    try:
        sms: SmsGateway = HttpSmsGateway(gateway.url, "s3cret", client)
        message_id = await sms.send("TPL_1", ["+8613800000000"], {"name": "张三", "id": "42"})
    finally:
        await client.aclose()
    assert message_id == "m-1"
    [request] = gateway.requests
    assert request["line"] == "POST /sms/send HTTP/1.1"
    assert request["headers"]["authorization"] == "Bearer s3cret"
    assert request["json"] == {
        "templateId": "TPL_1",
        "recipients": ["+8613800000000"],
        "fieldValues": {"name": "张三", "id": "42"},
    }


@pytest.mark.parametrize(
    ("status", "error"),
    [(400, PermanentError), (404, PermanentError), (503, RetryableError), (500, RetryableError)],
)
async def test_status_maps_to_error(
    gateway: SmsGatewayServer, status: int, error: type[Exception]
) -> None:
    gateway.status = status
    client = _client(gateway)
    try:
        with pytest.raises(error, match=str(status)):
            await HttpSmsGateway(gateway.url, "s3cret", client).send("T", ["1"], {})
    finally:
        await client.aclose()
    assert len(gateway.requests) == 1


async def test_wrong_token_is_permanent(gateway: SmsGatewayServer) -> None:
    client = _client(gateway)
    try:
        with pytest.raises(PermanentError, match="401"):
            await HttpSmsGateway(gateway.url, "wrong", client).send("T", ["1"], {})
    finally:
        await client.aclose()


async def test_no_answer_in_time_is_retryable(gateway: SmsGatewayServer) -> None:
    gateway.delay_s = 1.0
    client = _client(gateway, outbound_read_timeout_s=0.2)
    try:
        with pytest.raises(RetryableError, match="timed out"):
            await HttpSmsGateway(gateway.url, "s3cret", client).send("T", ["1"], {})
    finally:
        await client.aclose()


async def test_unreachable_is_retryable(gateway: SmsGatewayServer) -> None:
    url = gateway.url
    client = _client(gateway, outbound_connect_timeout_s=1)
    await gateway.close()
    try:
        with pytest.raises(RetryableError):
            await HttpSmsGateway(url, "s3cret", client).send("T", ["1"], {})
    finally:
        await client.aclose()
    gateway._server = None  # already closed
    await gateway.start()  # so the fixture can close it


async def test_loopback_not_allow_listed_is_refused(gateway: SmsGatewayServer) -> None:
    client = OutboundClient(Settings(outbound_allow=""))
    try:
        with pytest.raises(OutboundRefused):
            await HttpSmsGateway(gateway.url, "s3cret", client).send("T", ["1"], {})
    finally:
        await client.aclose()
    assert gateway.requests == []


def test_gateway_from_settings() -> None:
    with pytest.raises(ConfigurationError):
        gateway_from_settings(Settings())
    sms = gateway_from_settings(Settings(sms_gateway_url="https://sms.example/send"))
    assert isinstance(sms, HttpSmsGateway)
    assert "tok" not in repr(HttpSmsGateway("https://sms.example/send", "tok"))
