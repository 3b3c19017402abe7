"""The one outbound client against real receivers on 127.0.0.1 (SPEC X-4,
L-16): a 3xx is returned, never followed; no transport retries; the read
timeout applies; proxy variables are ignored; the response read is capped."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from flowledger.db.database import Database
from flowledger.outbound import client as client_module
from flowledger.outbound.client import OutboundClient
from flowledger.outbound.resources import Outbound
from flowledger.runtime import build_runtime
from flowledger.settings import Settings
from tests.outbound.fakes import RecordingBackend
from tests.outbound.receivers import HANG, Receiver, Redirect


def allowing(*receivers: Receiver, **settings: Any) -> OutboundClient:
    allow = ",".join(r.endpoint for r in receivers)
    return OutboundClient(Settings(outbound_allow=allow, **settings))


@pytest.mark.parametrize("where", ["other_receiver", "metadata"])
async def test_a_redirect_is_returned_not_followed_X4(
    where: str, receiver: Receiver, other_receiver: Receiver
) -> None:
    target = (
        f"{other_receiver.url}/stolen" if where == "other_receiver" else "http://169.254.169.254/"
    )
    receiver.reply = Redirect(target)
    client = allowing(receiver, other_receiver)
    try:
        response = await client.send("POST", f"{receiver.url}/hook", content=b"{}")
    finally:
        await client.aclose()
    assert response.status == 302 and response.header("location") == target
    assert len(receiver.requests) == 1
    assert other_receiver.requests == []


async def test_no_transport_retries_L16() -> None:
    backend = RecordingBackend(fail=True)
    client = OutboundClient(Settings(outbound_allow="10.0.0.0/8"), network_backend=backend)
    try:
        with pytest.raises(httpx.ConnectError):
            await client.send("POST", "http://10.1.1.1/x", content=b"{}")
    finally:
        await client.aclose()
    assert backend.connects == [("10.1.1.1", 80)]


async def test_read_timeout_applies_X4(receiver: Receiver) -> None:
    receiver.reply = HANG
    client = allowing(receiver, outbound_read_timeout_s=0.3)
    try:
        with pytest.raises(httpx.ReadTimeout):
            await client.send("GET", receiver.url)
    finally:
        await client.aclose()
    assert len(receiver.requests) == 1


async def test_proxy_variables_are_ignored(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    client = allowing(receiver)
    try:
        response = await client.send("GET", f"{receiver.url}/direct")
    finally:
        await client.aclose()
    assert response.status == 200
    assert [r.path for r in receiver.requests] == ["/direct"]


async def test_the_response_read_is_capped(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(client_module, "RESPONSE_READ_LIMIT", 10)
    receiver.body = b"z" * 100
    client = allowing(receiver)
    try:
        response = await client.send("GET", receiver.url)
    finally:
        await client.aclose()
    assert (response.body, response.complete) == (b"z" * 10, False)


async def test_the_runtime_client_follows_its_settings_and_closes_with_it(
    outbound_env: Settings,
) -> None:
    outbound = Outbound(outbound_env)
    first = outbound.client
    assert outbound.client is first
    assert first.allow.endpoints and first.max_body_bytes == outbound_env.outbound_max_body_bytes
    await outbound.aclose()
    assert first.closed and outbound.client is not first
    await outbound.aclose()


async def test_each_runtime_owns_its_outbound_client_and_closes_it(
    db: Database, outbound_env: Settings
) -> None:
    """No process-wide client (issue 16 item 3): a runtime's client is built
    from its settings, another runtime has another, and ``aclose`` closes it."""
    runtime = build_runtime(settings=outbound_env, db=db)
    client = runtime.outbound.client
    assert runtime.outbound.client is client
    assert client.max_body_bytes == outbound_env.outbound_max_body_bytes
    smaller = outbound_env.model_copy(update={"outbound_max_body_bytes": 1024})
    other = build_runtime(settings=smaller, db=db)
    assert other.outbound.client is not client
    assert other.outbound.client.max_body_bytes == 1024
    await runtime.aclose()
    await other.aclose()
    assert client.closed
