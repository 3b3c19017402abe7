"""Fixtures of the compensation tests: the API client and people of
tests/api, the real HTTP receivers of tests/outbound, the real SMTP server
and SMS gateway of tests/notify, and process settings naming the tenant
administrators (SPEC C-3) and a per-test attachments directory."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from flowledger.settings import Settings, get_settings
from tests.api.conftest import api, app, client, engine, people  # noqa: F401
from tests.notify.conftest import gateway, smtp  # noqa: F401
from tests.notify.servers import Collector, SmsGatewayServer
from tests.outbound.conftest import other_receiver, outbound_env, receiver  # noqa: F401

ADMINS = "default:alice|bob;other:olga"


@pytest.fixture(autouse=True)
def compensation_settings(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Settings]:
    """Administrators per tenant and an attachments directory of this test."""
    monkeypatch.setenv("FLOWLEDGER_ADMIN_USERS", ADMINS)
    monkeypatch.setenv("FLOWLEDGER_ATTACHMENTS_DIR", str(tmp_path / "attachments"))
    monkeypatch.setenv("FLOWLEDGER_ATTACHMENT_MAX_BYTES", "2048")
    yield get_settings()


@pytest.fixture
def smtp_env(monkeypatch: pytest.MonkeyPatch, smtp: Collector) -> Settings:  # noqa: F811
    monkeypatch.setenv("FLOWLEDGER_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("FLOWLEDGER_SMTP_PORT", str(smtp.port))
    monkeypatch.setenv("FLOWLEDGER_SMTP_TIMEOUT_S", "5")
    return get_settings()


@pytest.fixture
async def sms_env(
    monkeypatch: pytest.MonkeyPatch,
    gateway: SmsGatewayServer,  # noqa: F811
) -> AsyncIterator[Settings]:
    """The SMS gateway configured and allow-listed (its port only)."""
    monkeypatch.setenv("FLOWLEDGER_SMS_GATEWAY_URL", gateway.url)
    monkeypatch.setenv("FLOWLEDGER_SMS_GATEWAY_TOKEN", gateway.token)
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_ALLOW", gateway.endpoint)
    yield get_settings()
