"""Fixtures of the outbound tests: real receivers on 127.0.0.1, the
settings that allow-list exactly their ports, and guards proving that no
socket is connected."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest

from flowledger.settings import Settings, get_settings
from tests.outbound.receivers import Receiver

READ_TIMEOUT_S = 0.5
MAX_BODY_BYTES = 256


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    server = Receiver()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def other_receiver() -> AsyncIterator[Receiver]:
    server = Receiver()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def outbound_env(
    monkeypatch: pytest.MonkeyPatch, receiver: Receiver, other_receiver: Receiver
) -> AsyncIterator[Settings]:
    """Process settings allow-listing the two receivers' ports only, with a
    short read timeout; clients and runtimes built from now on use them."""
    monkeypatch.setenv(
        "FLOWLEDGER_OUTBOUND_ALLOW", f"{receiver.endpoint}, {other_receiver.endpoint}"
    )
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_READ_TIMEOUT_S", str(READ_TIMEOUT_S))
    # the receivers are local: a connection that takes long is a loaded
    # machine, and a timeout a second attempt the tests that count attempts
    # do not expect (a CI run saw one at 2 s)
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_CONNECT_TIMEOUT_S", "10")
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_MAX_BODY_BYTES", str(MAX_BODY_BYTES))
    yield get_settings()


@pytest.fixture
def no_sockets(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[Any]]:
    """Fail the test if any socket tries to connect or send a datagram."""
    attempts: list[Any] = []

    def refuse(self: socket.socket, *args: Any, **kwargs: Any) -> Any:
        attempts.append(args)
        raise AssertionError(f"a socket tried to reach {args!r}")

    for name in ("connect", "connect_ex", "sendto"):
        monkeypatch.setattr(socket.socket, name, refuse)
    yield attempts
    assert attempts == []
