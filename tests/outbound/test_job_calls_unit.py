"""``call_from_job`` without a database: a stand-in job context and a network
backend that never leaves the process. Covers what the worker tests do not:
a call that was never sent (connection refused) is retried even for an unsafe
write; an abort during the call; body encodings; the records carried by the
errors and remembered for the executor; a header the request cannot carry
(``outbound_request_invalid``, nothing written); a 3xx to an unsafe write is
unconfirmed (L-17), to a safe one ``outbound_redirect``."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from flowledger.errors import ExternalOutcomeUnconfirmed, PermanentError, RetryableError
from flowledger.outbound.client import OutboundClient
from flowledger.outbound.job_calls import (
    CallFailed,
    CallUnconfirmed,
    OutboundRequest,
    OutboundRequestInvalid,
    RedirectRefused,
    call_from_job,
)
from flowledger.outbound.records import recorded_exchange
from flowledger.outbound.ssrf import OutboundRefused
from flowledger.settings import Settings
from flowledger.worker.context import AbortReason
from tests.integration.worker_helpers import wait_until
from tests.outbound.fakes import RecordingBackend
from tests.outbound.receivers import HANG, Receiver


class FakeJob:
    id = 1


class FakeContext:
    """What ``call_from_job`` uses of a JobContext."""

    def __init__(self) -> None:
        self.job = FakeJob()
        self.idempotency_key = "op-key-1"
        self.abort = asyncio.Event()
        self.abort_reason: str | None = None
        self.marked = 0
        self.exchange: tuple[Any, Any] = (None, None)

    def record_exchange(self, request: Any, response: Any) -> None:
        self.exchange = (request, response)

    @property
    def aborted(self) -> bool:
        return self.abort.is_set()

    def fire_abort(self, reason: str) -> None:
        self.abort_reason = reason
        self.abort.set()

    async def mark_side_effect(self) -> None:
        self.marked += 1


@pytest.fixture
async def fake_net() -> Any:
    backend = RecordingBackend()
    client = OutboundClient(Settings(outbound_allow="10.0.0.0/8"), network_backend=backend)
    yield backend, client
    await client.aclose()


async def test_not_connected_is_retried_even_for_an_unsafe_write_L17() -> None:
    backend = RecordingBackend(fail=True)
    client = OutboundClient(Settings(outbound_allow="10.0.0.0/8"), network_backend=backend)
    ctx = FakeContext()
    try:
        with pytest.raises(CallFailed) as info:
            await call_from_job(ctx, OutboundRequest("POST", "http://10.0.0.5/x"), client=client)
    finally:
        await client.aclose()
    error = info.value
    assert isinstance(error, RetryableError) and "was not sent" in str(error)
    assert ctx.marked == 1 and backend.connects == [("10.0.0.5", 80)]
    assert error.request is not None and error.request["address"] == "10.0.0.5"
    assert error.response is not None and error.response["status"] is None
    assert recorded_exchange(ctx) == (error.request, error.response)


async def test_refused_target_marks_nothing_and_carries_the_request_X4(fake_net: Any) -> None:
    backend, client = fake_net
    ctx = FakeContext()
    request = OutboundRequest("POST", "http://169.254.169.254/latest", {"Authorization": "x"})
    with pytest.raises(OutboundRefused) as info:
        await call_from_job(ctx, request, client=client)
    assert ctx.marked == 0 and backend.connects == []
    assert info.value.request is not None
    assert info.value.request["headers"]["authorization"] == "[redacted]"


@pytest.mark.parametrize(
    ("body", "content_type", "sent"),
    [
        ({"a": [1, "é"]}, "application/json", '{"a":[1,"é"]}'.encode()),
        ("plain é", "text/plain; charset=utf-8", "plain é".encode()),
        (b"\x00\x01", None, b"\x00\x01"),
    ],
)
async def test_body_encodings_and_the_idempotency_header_L16(
    body: Any, content_type: str | None, sent: bytes, fake_net: Any
) -> None:
    backend, client = fake_net
    ctx = FakeContext()
    headers = {"x-idempotency-key": "mine"}
    result = await call_from_job(
        ctx,
        OutboundRequest("PUT", "http://10.0.0.5/r", headers, body, idempotent=True),
        client=client,
    )
    assert result.status == 200 and result.text() == "ok" and ctx.marked == 0
    head, _, payload = backend.written.partition(b"\r\n\r\n")
    assert payload == sent
    assert b"X-Idempotency-Key: op-key-1\r\n" in head and b"mine" not in head
    if content_type:
        assert f"Content-Type: {content_type}\r\n".encode() in head


@pytest.mark.parametrize(
    ("reason", "unsafe"),
    [(AbortReason.DEADLINE, True), (AbortReason.LEASE_LOST, True), (AbortReason.SHUTDOWN, False)],
)
async def test_an_abort_during_the_call_L17(reason: str, unsafe: bool, receiver: Receiver) -> None:
    receiver.reply = HANG
    client = OutboundClient(Settings(outbound_allow=receiver.endpoint))
    ctx = FakeContext()
    request = OutboundRequest("POST" if unsafe else "GET", receiver.url)
    call = asyncio.ensure_future(call_from_job(ctx, request, client=client))
    try:
        await wait_until(lambda: receiver.requests, what="the request to arrive")
        ctx.fire_abort(reason)
        with pytest.raises((CallUnconfirmed, CallFailed)) as info:
            await asyncio.wait_for(call, 5)
    finally:
        await client.aclose()
    assert isinstance(info.value, ExternalOutcomeUnconfirmed) == unsafe
    assert f"aborted during the call ({reason})" in str(info.value)
    assert len(receiver.requests) == 1


async def test_an_aborted_job_sends_nothing(fake_net: Any) -> None:
    backend, client = fake_net
    ctx = FakeContext()
    ctx.fire_abort(AbortReason.SHUTDOWN)
    with pytest.raises(CallFailed, match="not sent"):
        await call_from_job(ctx, OutboundRequest("POST", "http://10.0.0.5/"), client=client)
    assert ctx.marked == 0 and backend.connects == []


@pytest.mark.parametrize(
    "headers",
    [{"X-A": "1\r\nX-B: 2"}, {"X-A": "1\x00"}, {"X-A\r\nX-B": "2"}, {"X-A": "\x7f"}],
    ids=["crlf-value", "nul-value", "crlf-name", "del-value"],
)
async def test_a_control_character_in_a_header_is_refused_before_anything_X4(
    headers: dict[str, str], fake_net: Any
) -> None:
    backend, client = fake_net
    ctx = FakeContext()
    request = OutboundRequest("POST", "http://10.0.0.5/x", headers, {"n": 1})
    with pytest.raises(OutboundRequestInvalid) as info:
        await call_from_job(ctx, request, client=client)
    assert isinstance(info.value, PermanentError)
    assert info.value.code == "outbound_request_invalid"
    assert ctx.marked == 0 and backend.connects == [] and backend.written == b""
    assert info.value.request is not None
    assert all("\x00" not in k + v for k, v in info.value.request["headers"].items())


@pytest.mark.parametrize("headers", [{"X A": "1"}, {"X-A": " padded"}], ids=["name", "blank"])
async def test_a_header_the_http_library_refuses_is_not_sent_X4_L17(
    headers: dict[str, str], fake_net: Any
) -> None:
    """h11 refuses these while building the request head: the connection is
    open but not one byte is written, so it is no unknown outcome."""
    backend, client = fake_net
    ctx = FakeContext()
    request = OutboundRequest("POST", "http://10.0.0.5/x", headers, {"n": 1})
    with pytest.raises(OutboundRequestInvalid, match="was not sent") as info:
        await call_from_job(ctx, request, client=client)
    assert not isinstance(info.value, ExternalOutcomeUnconfirmed)
    assert backend.connects == [("10.0.0.5", 80)] and backend.written == b""
    assert info.value.response is not None and info.value.response["status"] is None


SEE_OTHER = b"HTTP/1.1 303 See Other\r\nLocation: /done\r\nContent-Length: 0\r\n\r\n"


@pytest.mark.parametrize(
    ("method", "idempotent", "error"),
    [
        ("POST", False, CallUnconfirmed),  # the write probably landed: L-17, no fallback
        ("DELETE", False, CallUnconfirmed),
        ("POST", True, RedirectRefused),
        ("GET", False, RedirectRefused),
    ],
)
async def test_a_3xx_is_unconfirmed_for_an_unsafe_write_only_L17_X4(
    method: str, idempotent: bool, error: type[Exception]
) -> None:
    backend = RecordingBackend(SEE_OTHER)
    client = OutboundClient(Settings(outbound_allow="10.0.0.0/8"), network_backend=backend)
    ctx = FakeContext()
    request = OutboundRequest(method, "http://10.0.0.5/x", idempotent=idempotent)
    try:
        with pytest.raises(error) as info:
            await call_from_job(ctx, request, client=client)
    finally:
        await client.aclose()
    assert type(info.value) is error
    assert "answered 303" in str(info.value) and "'/done'" in str(info.value)
    assert info.value.response is not None and info.value.response["status"] == 303
    assert len(backend.connects) == 1  # never followed


async def test_caller_framing_headers_are_dropped_X4(fake_net: Any) -> None:
    backend, client = fake_net
    ctx = FakeContext()
    headers = {"Content-Length": "1", "Transfer-Encoding": "chunked"}
    request = OutboundRequest("PUT", "http://10.0.0.5/r", headers, b"abc", idempotent=True)
    await call_from_job(ctx, request, client=client)
    head, _, payload = backend.written.partition(b"\r\n\r\n")
    assert payload == b"abc"
    assert b"Content-Length: 3\r\n" in head + b"\r\n" and b"Transfer-Encoding" not in head
