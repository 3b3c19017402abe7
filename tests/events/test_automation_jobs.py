"""Automation rules at work (SPEC X-6, L-14, L-15, L-17): outbox events
written by real engine steps are handed to ``enqueue_automation`` (as the
event relay does, in its transaction); the ``automation_action`` jobs it
enqueues run through the real claim → handler → settle path.

Covers: matching (event type, definition, condition) and one job per
(rule, action, event) even when the relay runs twice (L-15); an http action
reaches a real receiver with ``system.*`` / ``formData.*`` rendered from the
form as it is when the job runs (URL values percent-encoded, secret headers
decrypted); a clear 2xx success stores a receipt that a re-run after a crash
between step commit and settlement reuses — the receiver sees one request,
for an idempotent write (automatic retry) and an unsafe one (L-17 dead
letter, then the operator's retry); updateData writes the form once across
such a re-run and skips a finished instance; notify writes in-app messages,
sends email to a real aiosmtpd and SMS to a real gateway; a disabled rule's
job is skipped.

L-17 for notify: an email answered 451 or dropped after DATA, and an SMS
answered 502, go to the ``external_outcome_unconfirmed`` dead letter after
exactly one send; an email refused before DATA (no marker) and an SMS
answered 400 are ordinary failures, retried. X-4: secret headers of any
name are redacted on the attempt rows; a stored URL whose host comes from
form data is refused when the action runs.
"""

from __future__ import annotations

import email
import json
import socket
from collections.abc import AsyncIterator, Iterator
from email.message import EmailMessage
from email.policy import default
from typing import Any
from urllib.parse import unquote

import pytest
from aiosmtpd.controller import Controller
from cryptography.fernet import Fernet
from sqlalchemy import Text, cast, func, select, update

from flowledger.clock import ManualClock
from flowledger.db.automation_schema import workflow_automation_rules
from flowledger.db.database import Database
from flowledger.db.engine_schema import (
    workflow_event_outbox,
    workflow_form_writes,
    workflow_instances,
    workflow_messages,
)
from flowledger.db.schema import workflow_job_effects, workflow_job_executions, workflow_jobs
from flowledger.engine import Engine
from flowledger.events.automation import enqueue_automation
from flowledger.events.automation_rules import RuleSpec
from flowledger.events.automation_store import Rule, create_rule
from flowledger.ledger.models import Outcome, OutcomeKind
from flowledger.states import Pool
from flowledger.worker.context import JobContext
from flowledger.worker.executor import execute
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    new_engine,
    pending_task,
    run_due_jobs,
)
from tests.integration.ledger_helpers import rescue
from tests.ledger_access import ledger_of
from tests.notify.servers import Collector, SmsGatewayServer
from tests.outbound.conftest import other_receiver, outbound_env, receiver  # noqa: F401
from tests.outbound.receivers import Receiver
from tests.runtime_support import handler_for, process_secrets


@pytest.fixture
def smtp() -> Iterator[Collector]:
    handler = Collector()
    with socket.socket() as sock:  # a free port (aiosmtpd needs a fixed one)
        sock.bind(("127.0.0.1", 0))
        port = int(sock.getsockname()[1])
    controller = Controller(handler, hostname="127.0.0.1", port=port)
    controller.start()
    handler.port = controller.port
    try:
        yield handler
    finally:
        controller.stop()


@pytest.fixture
async def gateway() -> AsyncIterator[SmsGatewayServer]:
    server = SmsGatewayServer(token="s3cret")
    await server.start()
    try:
        yield server
    finally:
        await server.close()


FORM = [
    {"key": "amount", "type": "number"},
    {"key": "vendor", "type": "string"},
    {"key": "owner", "type": "string"},
    {"key": "note", "type": "string"},
    {"key": "total", "type": "number"},
]
EDGES = [("start", "mgr"), ("mgr", "end")]


# ------------------------------------------------------------------ helpers


@pytest.fixture
def engine(db: Database, clock: ManualClock) -> Engine:
    return new_engine(db, clock)


@pytest.fixture
async def purchase(engine: Engine) -> str:
    await engine.deploy(
        definition(
            "purchase",
            [START, approval("mgr", "boss"), END],
            [("start", "mgr"), ("mgr", "end")],
            FORM,
        ),
        actor="dev",
    )
    return "purchase"


@pytest.fixture
def secret_key(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setenv("FLOWLEDGER_SECRET_KEY", Fernet.generate_key().decode())
    yield


async def add_rule(db: Database, clock: ManualClock, **spec: Any) -> Rule:
    spec.setdefault("name", "rule")
    spec.setdefault("eventTypes", ["instance.started"])
    async with db.begin() as conn:
        return await create_rule(
            conn,
            RuleSpec.model_validate(spec),
            tenant="default",
            actor="dev",
            now=clock.now(),
            box=process_secrets(),
        )


async def outbox(db: Database, instance_id: int, event_type: str | None = None) -> list[Any]:
    query = select(workflow_event_outbox).where(workflow_event_outbox.c.instance_id == instance_id)
    if event_type is not None:
        query = query.where(workflow_event_outbox.c.event_type == event_type)
    async with db.read() as conn:
        rows = await conn.execute(query.order_by(workflow_event_outbox.c.id))
        return [dict(r) for r in rows.mappings().all()]


async def relay(db: Database, clock: ManualClock, instance_id: int) -> int:
    """What the event relay does: every outbox event of the instance."""
    count = 0
    for event in await outbox(db, instance_id):
        async with db.begin() as conn:
            count += await enqueue_automation(conn, event, now=clock.now(), ledger=ledger_of(conn))
    return count


async def rows(db: Database, table: Any, *where: Any) -> list[dict[str, Any]]:
    async with db.read() as conn:
        result = await conn.execute(select(table).where(*where).order_by(table.c.id))
        return [dict(r) for r in result.mappings().all()]


async def automation_jobs(db: Database) -> list[dict[str, Any]]:
    return await rows(db, workflow_jobs, workflow_jobs.c.type == "automation_action")


async def run_without_settling(db: Database, clock: ManualClock) -> list[Outcome | None]:
    """Claim and run the due outbound jobs, then "crash": nothing is settled."""
    claimed = await ledger_of(db).jobs_claim(
        db, pool=Pool.OUTBOUND, limit=10, node_id="doomed-node", now=clock.now()
    )
    return [
        await execute(
            JobContext(job, db, clock), handler_for(db, clock, job.type), abort_grace_s=1.0
        )
        for job in claimed
    ]


async def crash_and_reclaim(db: Database, clock: ManualClock) -> tuple[list[int], list[int]]:
    """Run the due jobs without settling, let the lease expire, drain."""
    outcomes = await run_without_settling(db, clock)
    assert outcomes and all(o is not None and o.kind is OutcomeKind.SUCCESS for o in outcomes)
    clock.advance(seconds=61)
    report = await rescue(db, clock.now())
    return report.retried, report.dead


# ------------------------------------------------------------------ matching


async def test_rules_match_type_definition_and_condition_once_per_event_X6_L15(
    db: Database, clock: ManualClock, engine: Engine, purchase: str
) -> None:
    hook = {"type": "http", "url": "https://hooks.example/x"}
    every = await add_rule(db, clock, name="every", eventTypes=["*"], actions=[hook, hook])
    big = await add_rule(db, clock, name="big", condition="form.amount > 1000", actions=[hook])
    await add_rule(db, clock, name="other def", definitionKey="travel", actions=[hook])
    await add_rule(db, clock, name="tasks", eventTypes=["task.completed"], actions=[hook])
    disabled = await add_rule(db, clock, name="off", enabled=False, actions=[hook])
    small = await engine.start(purchase, form={"amount": 500}, initiator="u")
    large = await engine.start(purchase, form={"amount": 1200}, initiator="u")
    (started,) = await outbox(db, large, "instance.started")
    async with db.begin() as conn:
        assert await enqueue_automation(conn, started, now=clock.now(), ledger=ledger_of(conn)) == 3
    async with db.begin() as conn:  # the relay runs again for the same event
        assert await enqueue_automation(conn, started, now=clock.now(), ledger=ledger_of(conn)) == 3
    (small_started,) = await outbox(db, small, "instance.started")
    async with db.begin() as conn:
        assert (
            await enqueue_automation(conn, small_started, now=clock.now(), ledger=ledger_of(conn))
            == 2
        )
    jobs = await automation_jobs(db)
    assert sorted(j["idempotency_key"] for j in jobs) == sorted(
        [
            f"auto:{every.id}:0:{started['id']}",
            f"auto:{every.id}:1:{started['id']}",
            f"auto:{big.id}:0:{started['id']}",
            f"auto:{every.id}:0:{small_started['id']}",
            f"auto:{every.id}:1:{small_started['id']}",
        ]
    )
    job = next(j for j in jobs if j["idempotency_key"].startswith(f"auto:{big.id}:"))
    assert (job["instance_id"], job["tenant_id"], job["pool"]) == (large, "default", Pool.OUTBOUND)
    assert job["trace_id"] == started["trace_id"]
    assert job["payload"]["event"]["type"] == "instance.started"
    assert job["payload"]["action"]["url"] == "https://hooks.example/x"
    assert disabled.id not in {j["payload"]["ruleId"] for j in jobs}


async def test_a_tenant_without_rules_enqueues_nothing_X6(
    db: Database, clock: ManualClock, engine: Engine, purchase: str
) -> None:
    iid = await engine.start(purchase, form={}, initiator="u")
    assert await relay(db, clock, iid) == 0
    assert await automation_jobs(db) == []


# ---------------------------------------------------------------------- http


async def test_http_action_reaches_receiver_rendered_with_current_form_X6(
    db: Database,
    clock: ManualClock,
    engine: Engine,
    purchase: str,
    receiver: Receiver,  # noqa: F811
    outbound_env: Any,  # noqa: F811
    secret_key: None,
) -> None:
    rule = await add_rule(
        db,
        clock,
        actions=[
            {
                "type": "http",
                "url": receiver.url + "/orders/{{system.instanceId}}?vendor={{formData.vendor}}",
                "httpMethod": "POST",
                "headers": {"X-Event": "{{system.eventType}} #{{system.eventId}}"},
                "secretHeaders": {"Authorization": "Bearer s3cret"},
                "bodyTemplate": (
                    '{"amount": {{formData.amount}}, "tenant": "{{system.tenantId}}", '
                    '"definition": "{{system.definitionKey}}", "at": "{{system.now}}"}'
                ),
            }
        ],
    )
    iid = await engine.start(purchase, form={"amount": 1200, "vendor": "a&b c/d"}, initiator="u")
    assert await relay(db, clock, iid) == 1
    # the form changes before the job runs: the job renders the current form
    await engine.approve(await pending_task(db, iid, "mgr"), actor="boss", form={"amount": 1500})
    (event,) = await outbox(db, iid, "instance.started")
    assert await run_due_jobs(db, clock) == 1
    (request,) = receiver.requests
    assert request.method == "POST"
    assert request.path == f"/orders/{iid}?vendor=a%26b%20c%2Fd"
    assert unquote(request.path.split("=", 1)[1]) == "a&b c/d"
    assert request.headers["x-event"] == f"instance.started #{event['id']}"
    assert request.headers["authorization"] == "Bearer s3cret"
    assert request.headers["content-type"] == "application/json"
    (job,) = await automation_jobs(db)
    assert request.headers["x-idempotency-key"] == job["operation_key"]
    assert json.loads(request.body) == {
        "amount": 1500,
        "tenant": "default",
        "definition": "purchase",
        "at": clock.now().isoformat(),
    }
    assert job["status"] == "succeeded"
    assert job["result"] == {"status": 200, "body": '{"ok": true}'}
    (receipt,) = await rows(db, workflow_job_effects)
    assert (receipt["step_key"], receipt["result"]) == ("http_result", job["result"])
    stored = (await rows(db, workflow_automation_rules))[0]["actions"][0]["secretHeaders"]
    assert stored["Authorization"] != "Bearer s3cret"  # encrypted at rest
    assert rule.actions[0]["secretHeaders"] == stored


@pytest.mark.parametrize("idempotent", [True, False], ids=["idempotent", "unsafe"])
async def test_http_success_receipt_is_reused_after_a_crash_before_settlement_L17_L14(
    db: Database,
    clock: ManualClock,
    engine: Engine,
    purchase: str,
    receiver: Receiver,  # noqa: F811
    outbound_env: Any,  # noqa: F811
    idempotent: bool,
) -> None:
    action = {
        "type": "http",
        "url": receiver.url + "/hook",
        "httpMethod": "PUT",
        "bodyTemplate": "{{formData.vendor}}",
        "idempotent": idempotent,
    }
    await add_rule(db, clock, actions=[action])
    iid = await engine.start(purchase, form={"vendor": "acme"}, initiator="u")
    await relay(db, clock, iid)
    retried, dead = await crash_and_reclaim(db, clock)
    (job,) = await automation_jobs(db)
    assert len(receiver.requests) == 1
    # idempotent: no side-effect marker; unsafe: the receipt of the confirmed
    # success cleared the marker (L-17) — either way the drain retries
    assert (retried, dead) == ([job["id"]], [])
    clock.advance(seconds=30)
    assert await run_due_jobs(db, clock) == 1
    assert len(receiver.requests) == 1  # the receipt was reused, nothing resent
    (job,) = await automation_jobs(db)
    assert job["status"] == "succeeded"
    assert job["result"] == {"status": 200, "body": '{"ok": true}'}
    assert len(await rows(db, workflow_job_effects)) == 1
    attempts = await rows(db, workflow_job_executions)
    assert [a["status"] for a in attempts] == ["failed", "succeeded"]
    assert receiver.requests[0].headers["content-type"] == "text/plain; charset=utf-8"


async def test_http_clear_refusal_is_retried_without_a_receipt_X6(
    db: Database,
    clock: ManualClock,
    engine: Engine,
    purchase: str,
    receiver: Receiver,  # noqa: F811
    outbound_env: Any,  # noqa: F811
) -> None:
    receiver.reply = 400
    await add_rule(db, clock, actions=[{"type": "http", "url": receiver.url + "/x"}])
    iid = await engine.start(purchase, form={}, initiator="u")
    await relay(db, clock, iid)
    await run_due_jobs(db, clock)
    (job,) = await automation_jobs(db)
    assert (job["status"], job["last_error_code"]) == ("pending", "http_client_error")
    assert await rows(db, workflow_job_effects) == []
    receiver.reply = 200
    clock.advance(seconds=30)
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 2
    assert (await automation_jobs(db))[0]["status"] == "succeeded"


# ---------------------------------------------------------------- updateData


async def _form_writes(db: Database, instance_id: int) -> list[dict[str, Any]]:
    """The automation's writes of the instance's form (not the start's)."""
    w = workflow_form_writes.c
    return await rows(
        db, workflow_form_writes, w.instance_id == instance_id, w.source.like("automation:%")
    )


async def test_update_data_writes_the_form_once_across_a_crash_L14_X6(
    db: Database, clock: ManualClock, engine: Engine, purchase: str
) -> None:
    rule = await add_rule(
        db,
        clock,
        actions=[
            {
                "type": "updateData",
                "fieldValues": {
                    "note": "{{system.eventType}} for {{formData.vendor}}",
                    "total": "{{formData.amount}}",
                },
            }
        ],
    )
    iid = await engine.start(purchase, form={"amount": 1200, "vendor": "acme"}, initiator="u")
    await relay(db, clock, iid)
    retried, dead = await crash_and_reclaim(db, clock)
    (job,) = await automation_jobs(db)
    assert (retried, dead) == ([job["id"]], [])
    (write,) = await _form_writes(db, iid)
    assert write["source"] == f"automation:{rule.id}"
    assert write["changes"] == {"note": "instance.started for acme", "total": 1200}
    clock.advance(seconds=30)
    assert await run_due_jobs(db, clock) == 1
    assert len(await _form_writes(db, iid)) == 1  # the receipt was reused
    (job,) = await automation_jobs(db)
    assert job["status"] == "succeeded"
    assert job["result"] == {"instanceId": iid, "fields": ["note", "total"]}
    (inst,) = await rows(db, workflow_instances, workflow_instances.c.id == iid)
    assert inst["form_data"] == {
        "amount": 1200,
        "vendor": "acme",
        "note": "instance.started for acme",
        "total": 1200,
    }


async def test_update_data_skips_a_finished_instance_X6(
    db: Database, clock: ManualClock, engine: Engine, purchase: str
) -> None:
    await add_rule(db, clock, actions=[{"type": "updateData", "fieldValues": {"note": "late"}}])
    iid = await engine.start(purchase, form={}, initiator="u")
    await relay(db, clock, iid)
    await engine.cancel(iid, actor="ops")
    await run_due_jobs(db, clock)
    (job,) = await automation_jobs(db)
    assert job["status"] == "succeeded"
    (attempt,) = await rows(db, workflow_job_executions)
    assert attempt["status"] == "skipped"
    assert await _form_writes(db, iid) == []


async def test_update_data_refused_by_the_form_schema_is_permanent_X6(
    db: Database, clock: ManualClock, engine: Engine, purchase: str
) -> None:
    await add_rule(db, clock, actions=[{"type": "updateData", "fieldValues": {"total": "many"}}])
    iid = await engine.start(purchase, form={}, initiator="u")
    await relay(db, clock, iid)
    await run_due_jobs(db, clock)
    (job,) = await automation_jobs(db)
    assert (job["status"], job["last_error_code"]) == ("dead", "permanent")
    assert "form.total" in job["last_error"]
    assert await _form_writes(db, iid) == []


# -------------------------------------------------------------------- notify


async def test_notify_in_app_posts_messages_once_X6(
    db: Database, clock: ManualClock, engine: Engine, purchase: str
) -> None:
    await add_rule(
        db,
        clock,
        name="Big purchase",
        eventTypes=["instance.finished"],
        actions=[
            {
                "type": "notify",
                "channel": "inApp",
                "recipients": ["{{formData.owner}}", "finance", "{{formData.missing}}"],
                "bodyTemplate": "Instance {{system.instanceId}} of {{formData.vendor}} ended",
            }
        ],
    )
    iid = await engine.start(purchase, form={"owner": "olga", "vendor": "acme"}, initiator="u")
    await engine.approve(await pending_task(db, iid, "mgr"), actor="boss")
    await relay(db, clock, iid)
    retried, _ = await crash_and_reclaim(db, clock)
    clock.advance(seconds=30)
    await run_due_jobs(db, clock)
    messages = await rows(db, workflow_messages)
    assert [(m["recipient"], m["tenant_id"], m["kind"]) for m in messages] == [
        ("olga", "default", "automation"),
        ("finance", "default", "automation"),
    ]
    assert {m["title"] for m in messages} == {"Big purchase: instance.finished"}
    assert {m["body"] for m in messages} == {f"Instance {iid} of acme ended"}
    (job,) = await automation_jobs(db)
    assert retried == [job["id"]]
    assert job["result"] == {"channel": "inApp", "messageIds": [m["id"] for m in messages]}


@pytest.fixture
def smtp_env(monkeypatch: pytest.MonkeyPatch, smtp: Collector) -> Iterator[Collector]:
    monkeypatch.setenv("FLOWLEDGER_SMTP_HOST", "127.0.0.1")
    monkeypatch.setenv("FLOWLEDGER_SMTP_PORT", str(smtp.port))
    yield smtp


async def test_notify_email_reaches_a_real_smtp_server_X6_X7(
    db: Database, clock: ManualClock, engine: Engine, purchase: str, smtp_env: Collector
) -> None:
    await add_rule(
        db,
        clock,
        actions=[
            {
                "type": "notify",
                "channel": "email",
                "recipients": ["{{formData.owner}}", "audit@example.com"],
                "title": "Purchase {{system.instanceId}} started",
                "bodyTemplate": "Vendor {{formData.vendor}}, amount {{formData.amount}}.",
            }
        ],
    )
    iid = await engine.start(
        purchase, form={"owner": "olga@example.com", "vendor": "acme", "amount": 5}, initiator="u"
    )
    await relay(db, clock, iid)
    await run_due_jobs(db, clock)
    (envelope,) = smtp_env.envelopes
    assert envelope.rcpt_tos == ["olga@example.com", "audit@example.com"]
    message = email.message_from_bytes(envelope.original_content, policy=default)
    assert isinstance(message, EmailMessage)
    assert message["Subject"] == f"Purchase {iid} started"
    content = message.get_body(("plain",))
    assert content is not None
    assert content.get_content().strip() == "Vendor acme, amount 5."
    (job,) = await automation_jobs(db)
    assert job["status"] == "succeeded"
    # marked before sending; the receipt of the confirmed send cleared the
    # job's marker, the attempt keeps it (L-17)
    assert job["side_effect_at"] is None
    (attempt,) = await rows(db, workflow_job_executions)
    assert attempt["side_effect_at"] is not None
    (receipt,) = await rows(db, workflow_job_effects)
    assert receipt["result"] == {
        "channel": "email",
        "recipients": ["olga@example.com", "audit@example.com"],
    }


@pytest.fixture
async def sms_env(
    monkeypatch: pytest.MonkeyPatch,
    gateway: SmsGatewayServer,
) -> AsyncIterator[SmsGatewayServer]:
    monkeypatch.setenv("FLOWLEDGER_SMS_GATEWAY_URL", gateway.url)
    monkeypatch.setenv("FLOWLEDGER_SMS_GATEWAY_TOKEN", gateway.token)
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_ALLOW", gateway.endpoint)
    yield gateway


async def test_notify_sms_reaches_the_gateway_X6_X7(
    db: Database, clock: ManualClock, engine: Engine, purchase: str, sms_env: SmsGatewayServer
) -> None:
    await add_rule(
        db,
        clock,
        actions=[
            {
                "type": "notify",
                "channel": "sms",
                "recipients": ["+4917012345"],
                "templateId": "T-1",
                "bodyTemplate": "{{formData.vendor}} started",
                "fieldValues": {"instance": "{{system.instanceId}}"},
            }
        ],
    )
    iid = await engine.start(purchase, form={"vendor": "acme"}, initiator="u")
    await relay(db, clock, iid)
    await run_due_jobs(db, clock)
    (request,) = sms_env.requests
    assert request["json"] == {
        "templateId": "T-1",
        "recipients": ["+4917012345"],
        "fieldValues": {
            "title": "rule: instance.started",
            "body": "acme started",
            "instance": str(iid),
        },
    }
    (job,) = await automation_jobs(db)
    assert request["headers"]["x-idempotency-key"] == job["operation_key"]
    assert job["result"] == {"channel": "sms", "messageId": "m-1"}


# ---------------------------------------------------------------- rule state


async def test_a_rule_disabled_after_the_event_skips_its_job_X6(
    db: Database, clock: ManualClock, engine: Engine, purchase: str
) -> None:
    rule = await add_rule(db, clock, actions=[{"type": "updateData", "fieldValues": {"note": "x"}}])
    iid = await engine.start(purchase, form={}, initiator="u")
    await relay(db, clock, iid)
    async with db.begin() as conn:
        await conn.execute(
            update(workflow_automation_rules)
            .where(workflow_automation_rules.c.id == rule.id)
            .values(enabled=False)
        )
    await run_due_jobs(db, clock)
    (attempt,) = await rows(db, workflow_job_executions)
    assert attempt["status"] == "skipped"
    assert await _form_writes(db, iid) == []


# ------------------------------------------------------- secrets and origins


async def test_secret_headers_of_any_name_are_redacted_on_the_attempt_row_X6_X4(
    db: Database,
    clock: ManualClock,
    engine: Engine,
    purchase: str,
    receiver: Receiver,  # noqa: F811
    outbound_env: Any,  # noqa: F811
    secret_key: None,
) -> None:
    receiver.reply = 502  # the failed attempt keeps its records too
    secret_headers = {"X-Partner-Auth": "partner-s3cret", "X-Signature": "sig-s3cret"}
    action = {"type": "http", "url": receiver.url + "/x", "secretHeaders": secret_headers}
    await add_rule(db, clock, actions=[action, {**action, "httpMethod": "GET"}])
    iid = await engine.start(purchase, form={}, initiator="u")
    await relay(db, clock, iid)
    await run_due_jobs(db, clock)
    assert len(receiver.requests) == 2
    assert {r.headers["x-partner-auth"] for r in receiver.requests} == {"partner-s3cret"}
    attempts = await rows(db, workflow_job_executions)
    assert len(attempts) == 2
    for attempt in attempts:
        headers = attempt["request"]["headers"]
        assert (headers["x-partner-auth"], headers["x-signature"]) == ("[redacted]", "[redacted]")
    c = workflow_job_executions.c
    async with db.read() as conn:
        leaked = await conn.execute(
            select(func.count())
            .select_from(workflow_job_executions)
            .where(cast(c.request, Text).contains("s3cret"))
        )
        assert leaked.scalar_one() == 0


async def test_a_url_whose_host_comes_from_form_data_is_refused_at_send_time_X4_X6(
    db: Database,
    clock: ManualClock,
    engine: Engine,
    purchase: str,
    receiver: Receiver,  # noqa: F811
    outbound_env: Any,  # noqa: F811
    secret_key: None,
) -> None:
    """A rule stored before save-time checking refused host placeholders (or
    written around them) still cannot send its secret headers to a host the
    instance's starter chose."""
    action = {
        "type": "http",
        "url": "https://hooks.example/x",
        "secretHeaders": {"Authorization": "Bearer s3cret"},
    }
    rule = await add_rule(db, clock, actions=[action])
    stored = dict(rule.actions[0], url=f"http://{{{{formData.vendor}}}}:{receiver.port}/x")
    async with db.begin() as conn:
        await conn.execute(
            update(workflow_automation_rules)
            .where(workflow_automation_rules.c.id == rule.id)
            .values(actions=[stored])
        )
    iid = await engine.start(purchase, form={"vendor": "127.0.0.1"}, initiator="u")
    await relay(db, clock, iid)
    await run_due_jobs(db, clock)
    assert receiver.requests == []
    (job,) = await automation_jobs(db)
    assert (job["status"], job["last_error_code"]) == ("dead", "outbound_refused")
    assert "placeholders may only appear in the path" in job["last_error"]


# ------------------------------------------- notify: unknown outcomes (L-17)


async def test_notify_email_failing_after_data_is_dead_unconfirmed_and_sent_once_L17(
    db: Database, clock: ManualClock, engine: Engine, purchase: str, smtp_env: Collector
) -> None:
    smtp_env.data_reply = "451 4.3.0 queue trouble"
    await add_rule(
        db,
        clock,
        actions=[
            {
                "type": "notify",
                "channel": "email",
                "recipients": ["a@example.com"],
                "bodyTemplate": "x",
            }
        ],
    )
    iid = await engine.start(purchase, form={}, initiator="u")
    await relay(db, clock, iid)
    await run_due_jobs(db, clock)
    (job,) = await automation_jobs(db)
    assert (job["status"], job["last_error_code"]) == ("dead", "external_outcome_unconfirmed")
    assert "451" in job["last_error"]
    clock.advance(seconds=3600)
    assert await run_due_jobs(db, clock) == 0
    assert smtp_env.data_attempts == 1
    (attempt,) = await rows(db, workflow_job_executions)
    assert attempt["side_effect_at"] is not None
    assert await rows(db, workflow_job_effects) == []


async def test_notify_email_dropped_after_data_is_dead_unconfirmed_L17(
    db: Database, clock: ManualClock, engine: Engine, purchase: str, smtp_env: Collector
) -> None:
    smtp_env.drop_after_data = True
    await add_rule(
        db,
        clock,
        actions=[
            {
                "type": "notify",
                "channel": "email",
                "recipients": ["a@example.com"],
                "bodyTemplate": "x",
            }
        ],
    )
    iid = await engine.start(purchase, form={}, initiator="u")
    await relay(db, clock, iid)
    await run_due_jobs(db, clock)
    clock.advance(seconds=3600)
    await run_due_jobs(db, clock)
    (job,) = await automation_jobs(db)
    assert (job["status"], job["last_error_code"]) == ("dead", "external_outcome_unconfirmed")
    assert smtp_env.data_attempts == 1
    assert len(await rows(db, workflow_job_executions)) == 1


async def test_notify_email_refused_before_data_is_retried_without_a_marker_L17(
    db: Database, clock: ManualClock, engine: Engine, purchase: str, smtp_env: Collector
) -> None:
    smtp_env.refuse["a@example.com"] = "450 4.2.1 mailbox busy"
    await add_rule(
        db,
        clock,
        actions=[
            {
                "type": "notify",
                "channel": "email",
                "recipients": ["a@example.com"],
                "bodyTemplate": "x",
            }
        ],
    )
    iid = await engine.start(purchase, form={}, initiator="u")
    await relay(db, clock, iid)
    await run_due_jobs(db, clock)
    (job,) = await automation_jobs(db)
    assert (job["status"], job["last_error_code"]) == ("pending", "retryable")
    assert job["side_effect_at"] is None
    (attempt,) = await rows(db, workflow_job_executions)
    assert attempt["side_effect_at"] is None  # nothing was handed over
    smtp_env.refuse.clear()
    clock.advance(seconds=30)
    assert await run_due_jobs(db, clock) == 1
    assert (await automation_jobs(db))[0]["status"] == "succeeded"
    assert (smtp_env.data_attempts, len(smtp_env.envelopes)) == (1, 1)


SMS_ACTION = {
    "type": "notify",
    "channel": "sms",
    "recipients": ["+4917012345"],
    "templateId": "T-1",
    "bodyTemplate": "hi",
}


async def test_notify_sms_answered_502_is_dead_unconfirmed_with_one_request_L17(
    db: Database, clock: ManualClock, engine: Engine, purchase: str, sms_env: SmsGatewayServer
) -> None:
    sms_env.status = 502
    await add_rule(db, clock, actions=[SMS_ACTION])
    iid = await engine.start(purchase, form={}, initiator="u")
    await relay(db, clock, iid)
    await run_due_jobs(db, clock)
    clock.advance(seconds=3600)
    assert await run_due_jobs(db, clock) == 0
    (job,) = await automation_jobs(db)
    assert (job["status"], job["last_error_code"]) == ("dead", "external_outcome_unconfirmed")
    assert len(sms_env.requests) == 1
    (attempt,) = await rows(db, workflow_job_executions)
    assert attempt["side_effect_at"] is not None
    assert attempt["response"]["status"] == 502
    assert attempt["request"]["headers"]["authorization"] == "[redacted]"


async def test_notify_sms_answered_400_is_an_ordinary_failure_retried_L17(
    db: Database, clock: ManualClock, engine: Engine, purchase: str, sms_env: SmsGatewayServer
) -> None:
    sms_env.status = 400
    await add_rule(db, clock, actions=[SMS_ACTION])
    iid = await engine.start(purchase, form={}, initiator="u")
    await relay(db, clock, iid)
    await run_due_jobs(db, clock)
    (job,) = await automation_jobs(db)
    assert (job["status"], job["last_error_code"]) == ("pending", "http_client_error")
    sms_env.status = 200
    clock.advance(seconds=30)
    assert await run_due_jobs(db, clock) == 1
    (job,) = await automation_jobs(db)
    assert job["status"] == "succeeded"
    assert job["result"] == {"channel": "sms", "messageId": "m-1"}
    assert len(sms_env.requests) == 2
