"""updateData, email and SMS compensation actions (SPEC C-4, C-6, L-14,
X-7): updateData writes the rendered text (null when unconfigured) through a
step receipt — once, even when the job runs again after a crash between its
commit and its settlement; email reaches a real aiosmtpd server with the
compensation subject; SMS goes through the HTTP gateway. L-17 / C-6: an
email whose connection drops, or that is answered 451, after DATA and an SMS
answered 502 end in the ``external_outcome_unconfirmed`` dead letter (ticket
failed) after exactly one send; a refusal before DATA and an SMS answered 400
are ordinary failures, retried."""

from __future__ import annotations

import email
from email.message import EmailMessage
from email.policy import default
from typing import Any

from flowledger.clock import ManualClock
from flowledger.compensation import operations
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.handlers.compensation_jobs import compensation_action
from flowledger.notify.email import COMPENSATION_SUBJECT
from flowledger.outbound.resources import Outbound
from flowledger.settings import Settings, get_settings
from flowledger.states import Pool
from flowledger.worker.context import JobContext
from flowledger.worker.executor import execute
from tests.compensation.flows import (
    deploy,
    failed_instance,
    form_writes,
    history,
    repair_at,
    ticket,
)
from tests.integration.engine_helpers import instance, jobs, run_due_jobs
from tests.ledger_access import ledger_of
from tests.notify.servers import Collector, SmsGatewayServer
from tests.runtime_support import handler_for

FORM = {"amount": 12.5, "vendor": "acme", "note": "n", "count": 3, "phone": "+8613800000000"}
UPDATE = {
    "type": "updateData",
    "fieldKeys": ["note", "amount", "phone"],
    "fieldValues": {"note": "undone at {{nodeKey}}: {{error}}", "amount": "{{form.count}}"},
}


async def _ticket_with(
    engine: Engine, db: Database, clock: ManualClock, action: dict[str, Any]
) -> tuple[int, int]:
    await deploy(engine)
    iid = await failed_instance(engine, db, clock, form=dict(FORM))
    ticket_id = await repair_at(engine, iid, kind="compensate", action=action, enqueue=True)
    assert ticket_id is not None
    return iid, ticket_id


async def test_update_data_writes_rendered_text_and_null_C4(
    db: Database, engine: Engine, clock: ManualClock
) -> None:
    iid, ticket_id = await _ticket_with(engine, db, clock, UPDATE)
    assert handler_for(db, clock, "compensation_action") is not None
    await run_due_jobs(db, clock)
    form = (await instance(db, iid))["form_data"]
    assert form["note"] == "undone at sub: child instance was rejected"
    assert form["amount"] == 3  # "3" rendered as text, typed by the number field
    assert form["phone"] is None  # configured key without a value
    assert form["vendor"] == "acme"
    [write] = [w for w in await form_writes(db, iid) if w["source"].startswith("compensation")]
    assert write["source"] == f"compensation:{ticket_id}" and write["written_by"] == "system"
    assert write["changes"] == {"note": form["note"], "amount": 3, "phone": None}
    row = await ticket(db, ticket_id)
    assert (row["status"], row["compensation_action_status"]) == ("pending", "succeeded")


async def _claim(db: Database, clock: ManualClock) -> Any:
    [job] = await ledger_of(db).jobs_claim(
        db, pool=Pool.OUTBOUND, limit=1, node_id="t", now=clock.now()
    )
    return job


async def test_update_data_after_crash_between_commit_and_settle_writes_once_C6_L14(
    db: Database, engine: Engine, clock: ManualClock
) -> None:
    iid, ticket_id = await _ticket_with(engine, db, clock, UPDATE)
    first = await _claim(db, clock)
    settings = get_settings()
    ctx = JobContext(first, db, clock)
    assert (await compensation_action(ctx, engine, settings, Outbound(settings)))[
        "type"
    ] == "updateData"
    # crash: the attempt never settles; the drain reclaims the job after its lease
    clock.advance(seconds=61)
    async with db.begin() as conn:
        assert (await ledger_of(conn).jobs_rescue(conn, now=clock.now())).retried == [first.id]
    clock.advance(seconds=31)
    again = await _claim(db, clock)
    assert (again.id, again.attempt) == (first.id, 2)
    outcome = await execute(
        JobContext(again, db, clock), handler_for(db, clock, again.type), abort_grace_s=1
    )
    assert outcome is not None
    await ledger_of(db).jobs_settle(db, [(again, outcome)], now=clock.now())
    writes = [w for w in await form_writes(db, iid) if w["source"] == f"compensation:{ticket_id}"]
    assert len(writes) == 1
    [job] = await jobs(db, iid, type="compensation_action")
    assert job["status"] == "succeeded"
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "succeeded"


async def test_update_data_refused_by_the_form_is_permanent_C4(
    db: Database, engine: Engine, clock: ManualClock
) -> None:
    action = {"type": "updateData", "fieldKeys": ["count"], "fieldValues": {"count": "lots"}}
    iid, ticket_id = await _ticket_with(engine, db, clock, action)
    await run_due_jobs(db, clock)
    [job] = await jobs(db, iid, type="compensation_action")
    assert (job["status"], job["attempts"]) == ("dead", 1) and "count" in job["last_error"]
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "failed"
    assert (await instance(db, iid))["form_data"]["count"] == 3


async def test_update_data_on_a_finished_instance_is_not_applied_C5(
    db: Database, engine: Engine, clock: ManualClock
) -> None:
    # the form of an ended instance is final: the job is skipped (nothing to
    # do), and the ticket says the action failed, so nobody reads it as undone
    iid, ticket_id = await _ticket_with(engine, db, clock, UPDATE)
    await operations.terminate(engine, ticket_id, actor="ops", reason="give up")
    await run_due_jobs(db, clock)
    assert (await instance(db, iid))["form_data"]["note"] == "n"
    [job] = await jobs(db, iid, type="compensation_action")
    assert job["status"] == "succeeded"
    row = await ticket(db, ticket_id)
    assert (row["status"], row["compensation_action_status"]) == ("terminated", "failed")
    assert "not applied" in (await history(db, ticket_id))[-1]["message"]


async def test_email_action_reaches_smtp_with_compensation_subject_C4_X7(
    db: Database, engine: Engine, clock: ManualClock, smtp: Collector, smtp_env: Settings
) -> None:
    action = {
        "type": "email",
        "recipients": ["ops@example.com", " ", "{{form.vendor}}@example.com"],
        "bodyTemplate": "instance {{instanceId}} failed at {{nodeKey}}: {{error}}",
    }
    iid, ticket_id = await _ticket_with(engine, db, clock, action)
    await run_due_jobs(db, clock)
    [envelope] = smtp.envelopes
    assert envelope.rcpt_tos == ["ops@example.com", "acme@example.com"]
    message = email.message_from_bytes(envelope.original_content, policy=default)
    assert isinstance(message, EmailMessage)
    # the subject of SPEC C-4, literally (English, then the seed's wording)
    assert message["Subject"] == "process compensation failure notice (流程补偿失败通知)"
    assert message["Subject"] == COMPENSATION_SUBJECT
    body = message.get_body(("plain",))
    assert body is not None
    assert (
        body.get_content().strip() == f"instance {iid} failed at sub: child instance was rejected"
    )
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "succeeded"


async def test_sms_action_goes_through_the_gateway_C4_X7(
    db: Database, engine: Engine, clock: ManualClock, gateway: SmsGatewayServer, sms_env: Settings
) -> None:
    action = {
        "type": "sms",
        "templateId": "TPL_COMP",
        "recipients": ["{{form.phone}}"],
        "fieldValues": {"instance": "{{instanceId}}", "vendor": "{{form.vendor}}"},
    }
    iid, ticket_id = await _ticket_with(engine, db, clock, action)
    await run_due_jobs(db, clock)
    [request] = gateway.requests
    assert request["headers"]["authorization"] == "Bearer s3cret"
    assert request["headers"]["x-idempotency-key"]
    assert request["json"] == {
        "templateId": "TPL_COMP",
        "recipients": ["+8613800000000"],
        "fieldValues": {"instance": str(iid), "vendor": "acme"},
    }
    [job] = await jobs(db, iid, type="compensation_action")
    assert job["result"]["messageId"] == "m-1"
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "succeeded"


async def test_sms_without_gateway_fails_permanently_C4(
    db: Database, engine: Engine, clock: ManualClock
) -> None:
    action = {"type": "sms", "templateId": "T", "recipients": ["1"]}
    iid, ticket_id = await _ticket_with(engine, db, clock, action)
    await run_due_jobs(db, clock)
    [job] = await jobs(db, iid, type="compensation_action")
    assert (job["status"], job["attempts"]) == ("dead", 1)
    assert "SMS gateway" in job["last_error"]
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "failed"


def test_update_data_values_follow_the_field_types_C4() -> None:
    from flowledger.compensation.runners import form_changes
    from flowledger.definitions.model import CompensationAction, FormSchema

    schema = FormSchema.model_validate(
        {
            "fields": [
                {"key": "n", "type": "number"},
                {"key": "i", "type": "integer"},
                {"key": "b", "type": "boolean"},
                {"key": "o", "type": "object"},
                {"key": "d", "type": "date"},
                {"key": "s", "type": "string"},
                {"key": "e", "type": "number"},
            ]
        }
    )
    action = CompensationAction.model_validate(
        {
            "type": "updateData",
            "fieldKeys": ["n", "i", "b", "o", "d", "s", "e", "missing"],
            "fieldValues": {
                "n": "{{form.x}}.5",
                "i": "{{form.x}}",
                "b": "TRUE",
                "o": '{"id": {{instanceId}}}',
                "d": "2026-01-0{{form.x}}",
                "s": "{{form.none}}",
                "e": "{{form.none}}",
            },
        }
    )
    values = {"form": {"x": 2}, "instanceId": 7, "nodeKey": "k", "error": None}
    assert form_changes(action, schema, values) == {
        "n": 2.5,
        "i": 2,
        "b": True,
        "o": {"id": 7},
        "d": "2026-01-02",
        "s": "",
        "e": None,
        "missing": None,
    }


EMAIL = {"type": "email", "recipients": ["ops@example.com"], "bodyTemplate": "x"}
SMS = {"type": "sms", "templateId": "TPL_COMP", "recipients": ["{{form.phone}}"]}


async def _dead_unconfirmed(db: Database, clock: ManualClock, iid: int, ticket_id: int) -> None:
    """The job is in the L-17 dead letter after one attempt and stays there."""
    await run_due_jobs(db, clock)
    clock.advance(seconds=3600)
    assert await run_due_jobs(db, clock) == 0
    [job] = await jobs(db, iid, type="compensation_action")
    assert (job["status"], job["last_error_code"]) == ("dead", "external_outcome_unconfirmed")
    assert job["attempts"] == 1
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "failed"


async def test_email_dropped_after_data_is_unconfirmed_and_sent_once_C6_L17(
    db: Database, engine: Engine, clock: ManualClock, smtp: Collector, smtp_env: Settings
) -> None:
    smtp.drop_after_data = True
    iid, ticket_id = await _ticket_with(engine, db, clock, EMAIL)
    await _dead_unconfirmed(db, clock, iid, ticket_id)
    assert smtp.data_attempts == 1


async def test_email_answered_451_after_data_is_unconfirmed_and_sent_once_C6_L17(
    db: Database, engine: Engine, clock: ManualClock, smtp: Collector, smtp_env: Settings
) -> None:
    smtp.data_reply = "451 4.3.0 queue trouble"
    iid, ticket_id = await _ticket_with(engine, db, clock, EMAIL)
    await _dead_unconfirmed(db, clock, iid, ticket_id)
    assert smtp.data_attempts == 1


async def test_email_refused_before_data_is_retried_C6_L17(
    db: Database, engine: Engine, clock: ManualClock, smtp: Collector, smtp_env: Settings
) -> None:
    smtp.refuse["ops@example.com"] = "421 4.3.2 try later"
    iid, ticket_id = await _ticket_with(engine, db, clock, EMAIL)
    await run_due_jobs(db, clock)
    [job] = await jobs(db, iid, type="compensation_action")
    assert (job["status"], job["side_effect_at"]) == ("pending", None)
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "pending"
    smtp.refuse.clear()
    clock.advance(seconds=30)
    await run_due_jobs(db, clock)
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "succeeded"
    assert (smtp.data_attempts, len(smtp.envelopes)) == (1, 1)


async def test_sms_answered_502_is_unconfirmed_with_one_request_C6_L17(
    db: Database, engine: Engine, clock: ManualClock, gateway: SmsGatewayServer, sms_env: Settings
) -> None:
    gateway.status = 502
    iid, ticket_id = await _ticket_with(engine, db, clock, SMS)
    await _dead_unconfirmed(db, clock, iid, ticket_id)
    assert len(gateway.requests) == 1


async def test_sms_answered_400_is_an_ordinary_failure_retried_C6_L17(
    db: Database, engine: Engine, clock: ManualClock, gateway: SmsGatewayServer, sms_env: Settings
) -> None:
    gateway.status = 400
    iid, ticket_id = await _ticket_with(engine, db, clock, SMS)
    await run_due_jobs(db, clock)
    [job] = await jobs(db, iid, type="compensation_action")
    assert (job["status"], job["last_error_code"]) == ("pending", "http_client_error")
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "pending"
    gateway.status = 200
    clock.advance(seconds=30)
    await run_due_jobs(db, clock)
    [job] = await jobs(db, iid, type="compensation_action")
    assert job["status"] == "succeeded" and job["result"]["messageId"] == "m-1"
    assert len(gateway.requests) == 2
    assert (await ticket(db, ticket_id))["compensation_action_status"] == "succeeded"
