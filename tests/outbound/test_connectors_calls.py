"""Connector calls from real jobs (SPEC X-3, X-4, L-16, L-17), on both
backends, against real receivers on 127.0.0.1 allow-listed by port.

Jobs run through ``run_due_jobs`` (claim → handler → settle); the handler
calls :func:`call_connector` with a relative path. Proven here: every auth
kind arrives as it should (the HMAC signature verifies over the body that
arrived), default headers and the call's headers are merged under the auth
headers; the rate limit refuses without sending and lets the call through
once the bucket has drained; the breaker opens after N consecutive
failures, refuses without sending, half-opens after its reset time, closes
on a success and reopens on a failed trial, and a clear 4xx counts as a
success; path escapes, unknown, disabled and undecryptable connectors send
nothing; every call leaves one audit row; and the secret appears nowhere —
attempt records, job rows, audit rows, logs.
"""

from __future__ import annotations

import asyncio
import base64
import json
from datetime import timedelta
from typing import Any

import httpx
import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.outbound.signing import verify
from flowledger.settings import Settings
from tests.integration.engine_helpers import run_due_jobs
from tests.integration.ledger_helpers import attempt_rows, job_row
from tests.outbound.receivers import Receiver
from tests.outbound.test_connectors_helpers import (
    RAISED,
    LogCapture,
    add_call,
    call_rows,
    make_connector,
    secret_key,
    use_other_key,
)

__all__ = ["secret_key"]  # the fixture, imported for pytest

SECRET = "Sup3r-s3cret-VALUE-42"
AUTH: dict[str, dict[str, Any]] = {
    "none": {},
    "bearer": {"auth_kind": "bearer", "secret": SECRET},
    "basic": {"auth_kind": "basic", "username": "svc-flow", "secret": SECRET},
    "api_key": {"auth_kind": "api_key", "header_name": "X-Partner-Auth", "secret": SECRET},
    "hmac": {"auth_kind": "hmac", "secret": SECRET},
}


def _no_secret(*things: Any) -> None:
    basic = base64.b64encode(f"svc-flow:{SECRET}".encode()).decode()
    for thing in things:
        text = repr(thing)
        assert SECRET not in text and basic not in text, text


@pytest.mark.parametrize("kind", list(AUTH))
async def test_each_auth_kind_arrives_and_no_secret_leaks_X3(
    kind: str,
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
    secret_key: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    await make_connector(
        db,
        clock,
        f"{receiver.url}/api",
        default_headers={"X-Team": "default", "Accept": "application/json"},
        **AUTH[kind],
    )
    job_id = await add_call(
        db,
        clock,
        instance_id=4242,
        method="POST",
        path="/orders?src=flow",
        body={"order": 7, "note": "ünïcode"},
        headers={"X-Team": "caller", "authorization": "Bearer forged"},
    )
    with LogCapture(caplog) as logs:
        await run_due_jobs(db, clock)
    row = await job_row(db, job_id)
    assert row.status == "succeeded", row.last_error
    (got,) = receiver.requests
    assert (got.method, got.path) == ("POST", "/api/orders?src=flow")
    assert json.loads(got.body) == {"order": 7, "note": "ünïcode"}  # sent as UTF-8 JSON
    assert got.headers["content-type"] == "application/json"
    assert got.headers["x-team"] == "caller"  # the call's header beats the default
    assert got.headers["accept"] == "application/json"
    assert got.headers["x-idempotency-key"] == row.operation_key  # L-16
    auth = got.headers.get("authorization")
    if kind == "none":
        assert auth == "Bearer forged"  # nothing to override
    elif kind == "bearer":
        assert auth == f"Bearer {SECRET}"
    elif kind == "basic":
        assert auth == "Basic " + base64.b64encode(f"svc-flow:{SECRET}".encode()).decode()
    elif kind == "api_key":
        assert got.headers["x-partner-auth"] == SECRET
        assert auth == "Bearer forged"
    else:
        verify(
            SECRET, httpx.Headers(got.headers), got.body, now=clock.now().timestamp(), tolerance_s=5
        )
        assert auth == "Bearer forged"

    (attempt,) = await attempt_rows(db, job_id)
    assert attempt.side_effect_at is not None  # an unsafe POST: L-17 marker first
    sent = attempt.request["headers"]
    assert attempt.request["url"] == f"{receiver.url}/api/orders?src=flow"
    assert sent["authorization"] == "[redacted]"
    if kind == "api_key":
        assert sent["x-partner-auth"] == "[redacted]"
    if kind == "hmac":
        assert sent["x-flowledger-signature"] == "[redacted]"
        assert sent["x-flowledger-timestamp"] == got.headers["x-flowledger-timestamp"]
    (audit,) = await call_rows(db)
    assert audit["job_id"] == job_id and audit["instance_id"] == 4242
    assert (audit["method"], audit["path"], audit["status"]) == ("POST", "/orders?src=flow", 200)
    assert audit["outcome"] == "ok" and audit["connector_key"] == "erp"
    assert audit["tenant_id"] == "acme" and audit["duration_ms"] >= 0
    assert any(e["event"] == "connector_call" for e in logs.events)
    _no_secret(attempt, row, audit, logs.text)


async def test_rate_limit_refuses_without_sending_then_lets_through_X3(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings, secret_key: str
) -> None:
    """2 calls/s with a burst of 2: two go at once, the third is refused
    unsent (retry in 500 ms); after the bucket drains it goes."""
    await make_connector(db, clock, receiver.url, rate=(2, 2))
    jobs = [await add_call(db, clock, path=f"/n/{n}") for n in range(3)]
    await run_due_jobs(db, clock)
    assert [r.path for r in receiver.requests] == ["/n/0", "/n/1"]
    limited = await job_row(db, jobs[2])
    assert (limited.status, limited.last_error_code) == ("pending", "connector_rate_limited")
    assert limited.run_at == clock.now() + timedelta(milliseconds=500)
    (attempt,) = await attempt_rows(db, jobs[2])
    assert attempt.request is None and attempt.side_effect_at is None
    # nothing was attempted: the refusal hands the job back without using an
    # attempt of its budget (a one-attempt trigger is not failed by a limit)
    assert (attempt.status, attempt.error_code) == ("canceled", "connector_rate_limited")
    assert limited.attempts == 0
    assert [c["outcome"] for c in await call_rows(db)] == ["ok", "ok", "connector_rate_limited"]

    await asyncio.sleep(0.55)
    clock.advance(ms=500)
    await run_due_jobs(db, clock)
    assert [r.path for r in receiver.requests] == ["/n/0", "/n/1", "/n/2"]
    assert (await job_row(db, jobs[2])).status == "succeeded"


async def test_breaker_opens_refuses_half_opens_and_closes_X3(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings, secret_key: str
) -> None:
    """Threshold 2, reset 0.3 s: two 503s open it; the next call is refused
    unsent; after 0.3 s a trial goes through, succeeds and closes it."""
    await make_connector(db, clock, f"{receiver.url}/api", breaker=(2, 0.3))
    receiver.reply = 503
    jobs = [await add_call(db, clock, path="/flaky") for _ in range(3)]
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 2
    for job_id in jobs[:2]:
        assert (await job_row(db, job_id)).last_error_code == "outbound_unavailable"
    refused = await job_row(db, jobs[2])
    assert (refused.status, refused.last_error_code) == ("pending", "connector_circuit_open")
    assert clock.now() < refused.run_at <= clock.now() + timedelta(milliseconds=302)
    outcomes = [(c["status"], c["outcome"]) for c in await call_rows(db)]
    assert outcomes == [
        (503, "outbound_unavailable"),
        (503, "outbound_unavailable"),
        (None, "connector_circuit_open"),
    ]

    await asyncio.sleep(0.35)
    receiver.reply = 200
    trial = await add_call(db, clock, path="/flaky")
    after = await add_call(db, clock, path="/flaky")
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 4  # the trial and the call after it
    assert (await job_row(db, trial)).status == "succeeded"
    assert (await job_row(db, after)).status == "succeeded"


async def test_a_failed_trial_reopens_the_breaker_X3(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings, secret_key: str
) -> None:
    await make_connector(db, clock, receiver.url, breaker=(1, 0.2))
    receiver.reply = 502
    first = await add_call(db, clock, path="/x")
    await run_due_jobs(db, clock)
    await asyncio.sleep(0.25)
    trial = await add_call(db, clock, path="/x")
    refused = await add_call(db, clock, path="/x")
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 2  # the first call and the trial
    assert (await job_row(db, first)).last_error_code == "outbound_unavailable"
    assert (await job_row(db, trial)).last_error_code == "outbound_unavailable"
    assert (await job_row(db, refused)).last_error_code == "connector_circuit_open"


async def test_a_clear_4xx_is_a_success_for_the_breaker_X3(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings, secret_key: str
) -> None:
    """Threshold 2: 503, 404, 503 never makes two consecutive failures, so
    every call is sent; unsent-not-connected also counts as a failure."""
    await make_connector(db, clock, receiver.url, breaker=(2, 30))
    receiver.routes = {"/a": 503, "/b": 404, "/c": 503, "/d": 200}
    for path in ("/a", "/b", "/c", "/d"):
        await add_call(db, clock, path=path)
    await run_due_jobs(db, clock)
    assert [r.path for r in receiver.requests] == ["/a", "/b", "/c", "/d"]
    outcomes = [c["outcome"] for c in await call_rows(db)]
    assert outcomes == ["outbound_unavailable", "http_client_error", "outbound_unavailable", "ok"]


async def test_unsafe_write_with_unknown_outcome_counts_and_dead_letters_X3_L17(
    db: Database, clock: ManualClock, receiver: Receiver, outbound_env: Settings, secret_key: str
) -> None:
    await make_connector(db, clock, receiver.url, breaker=(1, 30))
    receiver.reply = 500
    first = await add_call(db, clock, method="POST", path="/w", body={"n": 1})
    second = await add_call(db, clock, method="POST", path="/w", body={"n": 2})
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 1
    dead = await job_row(db, first)
    assert (dead.status, dead.last_error_code) == ("dead", "external_outcome_unconfirmed")
    refused = await job_row(db, second)
    assert (refused.status, refused.last_error_code) == ("pending", "connector_circuit_open")
    (attempt,) = await attempt_rows(db, second)
    assert attempt.side_effect_at is None  # refused before any marker


ESCAPES = ["//127.0.0.1/x", "/../other", "/%2e%2e/other", "http://127.0.0.1/x", "other"]


@pytest.mark.parametrize("path", ESCAPES)
async def test_path_escape_is_refused_with_no_packet_X3(
    path: str,
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    other_receiver: Receiver,
    outbound_env: Settings,
    secret_key: str,
) -> None:
    await make_connector(db, clock, f"{receiver.url}/api", auth_kind="bearer", secret=SECRET)
    path = path.replace("127.0.0.1", other_receiver.endpoint)
    job_id = await add_call(db, clock, method="POST", path=path, body={"x": 1})
    await run_due_jobs(db, clock)
    row = await job_row(db, job_id)
    assert (row.status, row.last_error_code) == ("dead", "connector_path_refused")
    assert receiver.requests == [] and other_receiver.requests == []
    (attempt,) = await attempt_rows(db, job_id)
    assert attempt.request is None and attempt.side_effect_at is None
    (audit,) = await call_rows(db)
    assert (audit["outcome"], audit["status"], audit["path"]) == (
        "connector_path_refused",
        None,
        path,
    )
    _no_secret(row, attempt, audit)


async def test_unknown_disabled_and_unreadable_connectors_send_nothing_X3(
    db: Database,
    clock: ManualClock,
    receiver: Receiver,
    outbound_env: Settings,
    secret_key: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    await make_connector(db, clock, receiver.url, key="off", enabled=False)
    await make_connector(db, clock, receiver.url, key="locked", auth_kind="bearer", secret=SECRET)
    unknown = await add_call(db, clock, connector="ghost", path="/x")
    other_tenant = await add_call(db, clock, connector="off", tenant="globex", path="/x")
    disabled = await add_call(db, clock, connector="off", path="/x")
    use_other_key(monkeypatch)
    unreadable = await add_call(db, clock, connector="locked", path="/x")
    await run_due_jobs(db, clock)
    assert receiver.requests == []
    codes = {job: (await job_row(db, job)).last_error_code for job in (unknown, other_tenant)}
    assert codes == {unknown: "connector_not_found", other_tenant: "connector_not_found"}
    assert (await job_row(db, disabled)).last_error_code == "connector_disabled"
    row = await job_row(db, unreadable)
    assert (row.status, row.last_error_code) == ("dead", "connector_secret_unreadable")
    assert "FLOWLEDGER_SECRET_KEY" in row.last_error
    outcomes = sorted(c["outcome"] for c in await call_rows(db))
    assert outcomes == ["connector_disabled", "connector_secret_unreadable"]
    assert type(RAISED[unknown]).__name__ == "ConnectorNotFound"
