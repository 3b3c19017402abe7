"""SMS through the HTTP gateway, sent from a job (SPEC X-7, C-4, L-16, L-17).

A real local HTTP server checks the bearer token and the JSON body; the
``nt_sms_send`` job sends one SMS with the configured gateway and runs
through the real claim → handler → settle path. The POST is an unsafe write
made with ``call_from_job``: the side-effect marker precedes it, the request
and response are stored on the attempt row (the token redacted). 2xx → the
gateway's id; 5xx / 408 / 429 / no answer in time → dead
``external_outcome_unconfirmed`` with exactly one request, never resent; a
clear 4xx (400, a wrong token) → the ordinary failure, retried with backoff;
not connected → retried; a target the SSRF policy refuses → dead, nothing
sent, no marker.
"""

from __future__ import annotations

from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.errors import ConfigurationError
from flowledger.ledger.models import JobSpec
from flowledger.notify.sms import HttpSmsGateway, SmsGateway, gateway_from_settings
from flowledger.outbound.resources import Outbound
from flowledger.settings import Settings, get_settings
from flowledger.states import Pool
from flowledger.worker.context import JobContext
from tests.integration.engine_helpers import run_due_jobs
from tests.integration.ledger_helpers import attempt_rows, job_row
from tests.ledger_access import ledger_of
from tests.notify.servers import SmsGatewayServer
from tests.runtime_support import TEST_HANDLERS, process_outbound


async def _send_sms(ctx: JobContext) -> Any:
    gateway: SmsGateway = gateway_from_settings(get_settings(), process_outbound())
    p = ctx.payload
    return {"id": await gateway.send(ctx, p["templateId"], p["recipients"], p["fieldValues"])}


SMS_SEND = TEST_HANDLERS.register("nt_sms_send", _send_sms, pool=Pool.OUTBOUND, max_attempts=3)
PAYLOAD = {"templateId": "TPL_1", "recipients": ["+8613800000000"], "fieldValues": {"n": "张三"}}


async def send_job(db: Database, clock: ManualClock) -> int:
    async with db.begin() as conn:
        spec = JobSpec(type=SMS_SEND.job_type, payload=PAYLOAD)
        return (await ledger_of(conn).job_insert(conn, spec, now=clock.now())).job_id


async def test_sms_job_posts_json_and_records_the_call_X7_L16_L17(
    db: Database, clock: ManualClock, gateway: SmsGatewayServer, sms_env: Settings
) -> None:
    job_id = await send_job(db, clock)
    assert await run_due_jobs(db, clock) == 1
    row = await job_row(db, job_id)
    assert (row.status, row.result) == ("succeeded", {"id": "m-1"})
    (request,) = gateway.requests
    assert request["line"] == "POST /sms/send HTTP/1.1"
    assert request["headers"]["authorization"] == "Bearer s3cret"
    assert request["headers"]["x-idempotency-key"] == row.operation_key
    assert request["json"] == PAYLOAD
    (attempt,) = await attempt_rows(db, job_id)
    assert attempt.side_effect_at is not None  # marked before the POST
    assert attempt.request["url"] == gateway.url
    assert attempt.request["headers"]["authorization"] == "[redacted]"
    assert attempt.response["status"] == 200
    assert "s3cret" not in repr(attempt)


@pytest.mark.parametrize("status", [502, 500, 503, 408, 429])
async def test_unknown_outcome_is_dead_unconfirmed_and_never_resent_L17(
    db: Database, clock: ManualClock, gateway: SmsGatewayServer, sms_env: Settings, status: int
) -> None:
    gateway.status = status
    job_id = await send_job(db, clock)
    await run_due_jobs(db, clock)
    row = await job_row(db, job_id)
    assert (row.status, row.last_error_code) == ("dead", "external_outcome_unconfirmed")
    assert str(status) in row.last_error
    clock.advance(seconds=3600)
    assert await run_due_jobs(db, clock) == 0
    assert len(gateway.requests) == 1
    (attempt,) = await attempt_rows(db, job_id)
    assert attempt.response["status"] == status


async def test_no_answer_in_time_is_dead_unconfirmed_L17(
    db: Database, clock: ManualClock, gateway: SmsGatewayServer, sms_env: Settings
) -> None:
    gateway.delay_s = 1.0  # the read timeout is 0.3 s
    job_id = await send_job(db, clock)
    await run_due_jobs(db, clock)
    row = await job_row(db, job_id)
    assert (row.status, row.last_error_code) == ("dead", "external_outcome_unconfirmed")
    assert len(gateway.requests) == 1
    (attempt,) = await attempt_rows(db, job_id)
    assert attempt.response["status"] is None


@pytest.mark.parametrize("token", ["s3cret", "wrong"], ids=["400", "401"])
async def test_a_clear_refusal_is_an_ordinary_failure_retried_L17(
    db: Database,
    clock: ManualClock,
    gateway: SmsGatewayServer,
    sms_env: Settings,
    monkeypatch: pytest.MonkeyPatch,
    token: str,
) -> None:
    gateway.status = 400
    monkeypatch.setenv("FLOWLEDGER_SMS_GATEWAY_TOKEN", token)
    job_id = await send_job(db, clock)
    await run_due_jobs(db, clock)
    row = await job_row(db, job_id)
    assert (row.status, row.last_error_code) == ("pending", "http_client_error")
    gateway.status = 200
    monkeypatch.setenv("FLOWLEDGER_SMS_GATEWAY_TOKEN", "s3cret")
    clock.advance(seconds=30)
    assert await run_due_jobs(db, clock) == 1
    assert (await job_row(db, job_id)).status == "succeeded"
    assert len(gateway.requests) == 2
    assert [a.status for a in await attempt_rows(db, job_id)] == ["failed", "succeeded"]


async def test_unreachable_gateway_is_retried_X7(
    db: Database, clock: ManualClock, gateway: SmsGatewayServer, sms_env: Settings
) -> None:
    await gateway.close()
    try:
        job_id = await send_job(db, clock)
        await run_due_jobs(db, clock)
        row = await job_row(db, job_id)
        assert (row.status, row.last_error_code) == ("pending", "outbound_unavailable")
    finally:
        gateway._server = None  # already closed
        await gateway.start()  # so the fixture can close it


async def test_loopback_not_allow_listed_is_refused_without_a_marker_X4(
    db: Database,
    clock: ManualClock,
    gateway: SmsGatewayServer,
    sms_env: Settings,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_ALLOW", "")
    job_id = await send_job(db, clock)
    await run_due_jobs(db, clock)
    row = await job_row(db, job_id)
    assert (row.status, row.last_error_code) == ("dead", "outbound_refused")
    assert gateway.requests == []
    (attempt,) = await attempt_rows(db, job_id)
    assert attempt.side_effect_at is None


def test_gateway_from_settings() -> None:
    outbound = Outbound(Settings())
    with pytest.raises(ConfigurationError):
        gateway_from_settings(Settings(), outbound)
    sms = gateway_from_settings(Settings(sms_gateway_url="https://sms.example/send"), outbound)
    assert isinstance(sms, HttpSmsGateway)
    assert "tok" not in repr(HttpSmsGateway("https://sms.example/send", "tok", outbound))
