"""Fixtures of the notification tests: a real SMTP server (aiosmtpd) and a
real SMS gateway (a minimal HTTP/1.1 server), both on 127.0.0.1, and process
settings configuring that gateway (allow-listed for its port only)."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator

import pytest
from aiosmtpd.controller import Controller

from flowledger.settings import Settings, get_settings
from tests.api.conftest import api, app, client, engine  # noqa: F401 (API test fixtures)
from tests.notify.servers import Collector, SmsGatewayServer


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture
def smtp() -> Iterator[Collector]:
    handler = Collector()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    handler.port = controller.port
    try:
        yield handler
    finally:
        controller.stop()


@pytest.fixture
def smtp_settings(smtp: Collector) -> Settings:
    return Settings(smtp_host="127.0.0.1", smtp_port=smtp.port, smtp_timeout_s=5)


@pytest.fixture
async def gateway() -> AsyncIterator[SmsGatewayServer]:
    server = SmsGatewayServer(token="s3cret")
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def sms_env(
    monkeypatch: pytest.MonkeyPatch, gateway: SmsGatewayServer
) -> AsyncIterator[Settings]:
    """The gateway configured and allow-listed, a short read timeout; the
    runtimes (and their outbound clients) built from now on use these settings."""
    monkeypatch.setenv("FLOWLEDGER_SMS_GATEWAY_URL", gateway.url)
    monkeypatch.setenv("FLOWLEDGER_SMS_GATEWAY_TOKEN", gateway.token)
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_ALLOW", gateway.endpoint)
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_READ_TIMEOUT_S", "0.3")
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_CONNECT_TIMEOUT_S", "1")
    yield get_settings()
