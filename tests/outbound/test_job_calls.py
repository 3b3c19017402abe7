"""Outbound calls from a job, through a real in-process Worker on both
backends, against real receivers on 127.0.0.1 allow-listed for their ports
only (SPEC L-16, L-17, X-4).

The ``ot_http_call`` handler sends the call its payload describes with
``call_from_job``. An unsafe POST: 2xx → succeeded with request and response
on the attempt row; a clear 4xx → the normal failure (pending with backoff,
``http_client_error``); 500 / 502 / 408 / 429 / a reset after the request was
read / no response within the read timeout → dead
``external_outcome_unconfirmed`` with exactly one request received. The same
failures for an ``idempotent`` POST or a GET → retried (pending with backoff,
``Retry-After`` honoured; one job per failure, run together). A 3xx is not
followed: to an unsafe POST (a 303 usually means the write landed) it is the
L-17 dead letter, to an idempotent POST or a GET the permanent
``outbound_redirect``. A header with CR/LF (header injection) or one the HTTP
library refuses ends ``outbound_request_invalid`` with not one byte at the
receiver. ``X-Idempotency-Key`` is stable across a manual retry with the same
payload and new after a changed payload. A lost lease during an unsafe call
ends, after the lease expires and the rescue runs, in the same L-17 dead
letter. A target refused by the SSRF guard sends nothing and sets no marker.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from datetime import timedelta
from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ledger.models import JobSpec
from flowledger.outbound.job_calls import OutboundRequest, call_from_job
from flowledger.settings import Settings
from flowledger.worker.context import AbortReason, JobContext
from tests.integration.ledger_helpers import attempt_rows, job_row
from tests.integration.worker_helpers import OUTBOUND, running_worker, wait_job, wait_until
from tests.ledger_access import ledger_of
from tests.outbound.conftest import MAX_BODY_BYTES
from tests.outbound.receivers import HANG, RESET, Receiver, Redirect
from tests.runtime_support import TEST_HANDLERS, process_outbound

CONTEXTS: dict[int, JobContext] = {}
RAISED: dict[int, BaseException] = {}


async def _http_call(ctx: JobContext) -> Any:
    CONTEXTS[ctx.job.id] = ctx
    p = ctx.payload
    request = OutboundRequest(
        p["method"], p["url"], p.get("headers", {}), p.get("body"), p.get("idempotent", False)
    )
    try:
        result = await call_from_job(ctx, request, client=process_outbound().client)
    except BaseException as exc:
        RAISED[ctx.job.id] = exc
        raise
    return {"status": result.status, "body": result.json()}


HTTP_CALL = TEST_HANDLERS.register("ot_http_call", _http_call, pool=OUTBOUND, max_attempts=3)


async def add_call(db: Database, clock: ManualClock, **payload: Any) -> int:
    async with db.begin() as conn:
        spec = JobSpec(type=HTTP_CALL.job_type, payload=payload)
        return (await ledger_of(conn).job_insert(conn, spec, now=clock.now())).job_id


def post(receiver: Receiver, **extra: Any) -> dict[str, Any]:
    return {"method": "POST", "url": f"{receiver.url}/hook", "body": {"n": 1}, **extra}


async def run_one(db: Database, clock: ManualClock, status: str, payload: dict[str, Any]) -> Any:
    async with running_worker(db, clock):
        job_id = await add_call(db, clock, **payload)
        row = await wait_job(db, job_id, status)
    (attempt,) = await attempt_rows(db, job_id)
    return row, attempt


async def test_success_records_request_and_response_L16_X4(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    payload = post(
        receiver,
        headers={"Authorization": "Bearer s3cret", "X-Idempotency-Key": "caller-chosen"},
        body={"note": "x" * 1000},
    )
    row, attempt = await run_one(db, clock, "succeeded", payload)
    assert row.result == {"status": 200, "body": {"ok": True}}
    (received,) = receiver.requests
    assert received.headers["x-idempotency-key"] == row.operation_key  # L-16
    assert received.headers["authorization"] == "Bearer s3cret"
    assert attempt.side_effect_at is not None  # L-17 marker before sending
    request, response = attempt.request, attempt.response
    assert (request["method"], request["url"]) == ("POST", f"{receiver.url}/hook")
    assert request["headers"]["authorization"] == "[redacted]"
    assert request["headers"]["x-idempotency-key"] == row.operation_key
    assert request["body_truncated"] and request["body_bytes"] == len(received.body)
    assert request["body"].endswith(f"first {MAX_BODY_BYTES} kept]")
    assert (response["status"], response["body"]) == (200, '{"ok": true}')
    assert response["headers"]["set-cookie"] == "[redacted]"
    assert "s3cret" not in repr(attempt) and "receiver-secret" not in repr(attempt)


@pytest.mark.parametrize("status", [400, 404])
async def test_a_clear_4xx_is_a_normal_failure_L17(
    status: int, db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.reply = status
    row, attempt = await run_one(db, clock, "pending", post(receiver))
    assert row.last_error_code == "http_client_error"
    assert row.run_at == clock.now() + timedelta(seconds=30)
    assert f"answered {status}" in row.last_error
    assert attempt.response["status"] == status
    assert len(receiver.requests) == 1


UNKNOWN = [500, 502, 408, 429, RESET, HANG]


@pytest.mark.parametrize("reply", UNKNOWN, ids=str)
async def test_unknown_outcome_of_an_unsafe_write_is_dead_unconfirmed_L17(
    reply: int | str, db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.reply = reply
    row, attempt = await run_one(db, clock, "dead", post(receiver))
    assert row.last_error_code == "external_outcome_unconfirmed"
    assert len(receiver.requests) == 1  # exactly one request; never resent
    assert attempt.side_effect_at is not None
    assert attempt.request["method"] == "POST"
    if isinstance(reply, int):
        assert attempt.response["status"] == reply
    else:
        assert attempt.response["status"] is None
        assert attempt.response["error"].startswith(
            "ReadTimeout" if reply == HANG else ("ReadError", "RemoteProtocolError")
        )


@pytest.mark.parametrize("kind", ["idempotent_post", "get"])
async def test_unknown_outcome_of_a_safe_call_is_retried_L17(
    kind: str, db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    """One job per failure kind, run together by one worker."""
    receiver.routes = {f"/{reply}": reply for reply in UNKNOWN}
    method = "GET" if kind == "get" else "POST"
    extra = {} if kind == "get" else {"idempotent": True, "body": {"n": 1}}
    jobs: dict[int | str, int] = {}
    async with running_worker(db, clock):
        for reply in UNKNOWN:
            payload = {"method": method, "url": f"{receiver.url}/{reply}", **extra}
            jobs[reply] = await add_call(db, clock, **payload)
        rows = {reply: await wait_job(db, job_id, "pending") for reply, job_id in jobs.items()}
    for reply, row in rows.items():
        assert row.last_error_code == "outbound_unavailable", reply
        delay = 7 if reply == 429 else 30  # the receiver's Retry-After: 7
        assert row.run_at == clock.now() + timedelta(seconds=delay), reply
        (attempt,) = await attempt_rows(db, jobs[reply])
        assert attempt.side_effect_at is None
        assert attempt.request["method"] == method
        assert attempt.response["status"] == (reply if isinstance(reply, int) else None)
    assert sorted(r.path for r in receiver.requests) == sorted(f"/{reply}" for reply in UNKNOWN)


REDIRECTS = [
    # (the call, the redirect status, the job's last_error_code)
    ("unsafe_post", 303, "external_outcome_unconfirmed"),  # L-17: it may have landed
    ("unsafe_post", 307, "external_outcome_unconfirmed"),
    ("idempotent_post", 302, "outbound_redirect"),
    ("get", 301, "outbound_redirect"),
]


@pytest.mark.parametrize(("kind", "status", "code"), REDIRECTS)
@pytest.mark.parametrize("where", ["other_receiver", "metadata"])
async def test_a_redirect_is_not_followed_X4_L17(
    where: str,
    kind: str,
    status: int,
    code: str,
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    other_receiver: Receiver,
    outbound_env: Settings,
) -> None:
    target = f"{other_receiver.url}/x" if where == "other_receiver" else "http://169.254.169.254/"
    receiver.reply = Redirect(target, status=status)
    payload = {
        "unsafe_post": post(receiver),
        "idempotent_post": post(receiver, idempotent=True),
        "get": {"method": "GET", "url": f"{receiver.url}/hook"},
    }[kind]
    row, attempt = await run_one(db, clock, "dead", payload)
    assert row.last_error_code == code
    assert target in row.last_error and "redirects are not followed" in row.last_error
    assert attempt.response["status"] == status
    assert (attempt.side_effect_at is not None) == (kind == "unsafe_post")
    assert len(receiver.requests) == 1  # never resent, never followed
    assert other_receiver.requests == []


class ByteCounter:
    """A TCP server on 127.0.0.1 that records every byte it receives and
    never answers."""

    def __init__(self) -> None:
        self.connections = 0
        self.closed = 0
        self.received = b""
        self._server: asyncio.Server | None = None

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._handle, "127.0.0.1", 0)

    @property
    def url(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while chunk := await reader.read(65536):
                self.received += chunk
        finally:
            self.closed += 1
            writer.close()

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()


@pytest.fixture
async def counter(
    monkeypatch: pytest.MonkeyPatch, outbound_env: Settings
) -> AsyncIterator[ByteCounter]:
    """A :class:`ByteCounter`, allow-listed alone."""
    server = ByteCounter()
    await server.start()
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_ALLOW", server.url.removeprefix("http://"))
    try:
        yield server
    finally:
        await server.close()


@pytest.mark.parametrize(
    ("headers", "connects"),
    [
        ({"X-Order": "A1\r\nX-Injected: yes"}, 0),  # header injection: refused before connecting
        ({"X-Order": "A1\nX-Injected: yes"}, 0),
        ({"X Order": "A1"}, 1),  # refused by the HTTP library while building the head
        ({"X-Order": "A1\x0bB"}, 0),  # any control character but HTAB
        ({"X-Order": " A1"}, 1),  # leading blanks: h11 refuses the value
    ],
    ids=["crlf", "lf", "bad-name", "vtab", "padded"],  # NUL: the unit tests (PG JSON refuses it)
)
async def test_an_invalid_header_sends_nothing_and_is_not_unconfirmed_X4_L17(
    headers: dict[str, str],
    connects: int,
    db: Database,
    clock: ManualClock,
    counter: ByteCounter,
) -> None:
    payload = {"method": "POST", "url": f"{counter.url}/hook", "body": {"n": 1}}
    row, attempt = await run_one(db, clock, "dead", {**payload, "headers": headers})
    assert row.last_error_code == "outbound_request_invalid"  # permanent: never retried
    assert row.attempts == 1 and "not sent" in row.last_error
    assert attempt.request["method"] == "POST"
    if connects == 0:  # the record shows the refused value escaped
        assert attempt.request["headers"]["x-order"] == repr(headers["X-Order"])
    await wait_until(lambda: counter.closed == counter.connections, what="the connection to close")
    assert counter.connections == connects
    assert counter.received == b""  # not one byte reached the receiver
    # refused before the marker when the check is ours; either way not L-17
    assert (attempt.side_effect_at is None) == (connects == 0)


async def test_caller_framing_headers_are_replaced_by_the_bodys_X4(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    headers = {"Content-Length": "1", "Transfer-Encoding": "chunked"}
    await run_one(db, clock, "succeeded", post(receiver, headers=headers))
    (received,) = receiver.requests
    assert received.body == b'{"n":1}'
    assert received.headers["content-length"] == "7"
    assert "transfer-encoding" not in received.headers


async def test_refused_target_sends_nothing_and_marks_nothing_X4(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    port = receiver.port + 1 if receiver.port < 65535 else receiver.port - 1
    row, attempt = await run_one(db, clock, "dead", post(receiver, url=f"http://127.0.0.1:{port}/"))
    assert row.last_error_code == "outbound_refused"
    assert "loopback address and not allow-listed" in row.last_error
    assert attempt.side_effect_at is None
    assert attempt.request["url"] == f"http://127.0.0.1:{port}/"
    assert receiver.requests == []


async def test_idempotency_key_across_manual_retries_L16(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings
) -> None:
    receiver.reply = 500
    async with running_worker(db, clock):
        job_id = await add_call(db, clock, **post(receiver))
        await wait_job(db, job_id, "dead")
        async with db.begin() as conn:
            await ledger_of(conn).job_retry(conn, job_id, now=clock.now())
        await wait_until(lambda: len(receiver.requests) == 2, what="the retried call")
        await wait_job(db, job_id, "dead")
        async with db.begin() as conn:
            await ledger_of(conn).job_retry(
                conn, job_id, now=clock.now(), payload=post(receiver, body={"n": 2})
            )
        await wait_until(lambda: len(receiver.requests) == 3, what="the call with a new payload")
        row = await wait_job(db, job_id, "dead")
    first, same, changed = (r.headers["x-idempotency-key"] for r in receiver.requests)
    assert first == same
    assert changed != first and changed == row.operation_key
    assert [r.body for r in receiver.requests] == [b'{"n":1}', b'{"n":1}', b'{"n":2}']


async def test_lease_lost_during_an_unsafe_call_L17(
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
) -> None:
    receiver.reply = HANG
    async with running_worker(db, clock):
        job_id = await add_call(db, clock, **post(receiver))
        await wait_until(lambda: receiver.requests, what="the request to arrive")
        CONTEXTS[job_id].fire_abort(AbortReason.LEASE_LOST)
        await wait_until(lambda: job_id in RAISED, what="the call to give up")
        await asyncio.sleep(0.05)
        assert (await job_row(db, job_id)).status == "running"  # the executor wrote nothing
    assert type(RAISED[job_id]).__name__ == "CallUnconfirmed"
    assert "aborted during the call (lease_lost)" in str(RAISED[job_id])
    clock.advance(seconds=300)
    async with db.begin() as conn:
        await ledger_of(conn).jobs_rescue(conn, now=clock.now())
    row = await job_row(db, job_id)
    assert (row.status, row.last_error_code) == ("dead", "external_outcome_unconfirmed")
    assert len(receiver.requests) == 1
