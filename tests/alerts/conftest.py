"""Fixtures of the alerting tests: a real SMTP server (aiosmtpd) set as the
process's SMTP settings, and the API and outbound receiver fixtures."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from aiosmtpd.controller import Controller

from tests.api.conftest import api, app, client, engine  # noqa: F401 (API test fixtures)
from tests.notify.conftest import free_port
from tests.notify.servers import Collector
from tests.outbound.conftest import other_receiver, outbound_env, receiver  # noqa: F401


@pytest.fixture
def smtp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Collector]:
    """A real aiosmtpd server on 127.0.0.1, set as the process's SMTP server."""
    handler = Collector()
    controller = Controller(handler, hostname="127.0.0.1", port=free_port())
    controller.start()
    handler.port = controller.port
    monkeypatch.setenv("FLOWLEDGER_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("FLOWLEDGER_SMTP_PORT", str(controller.port))
    monkeypatch.setenv("FLOWLEDGER_SMTP_TIMEOUT_S", "5")
    try:
        yield handler
    finally:
        controller.stop()
