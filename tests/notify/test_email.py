"""Email over SMTP (SPEC X-7, L-17): a real aiosmtpd server receives the
message. Failures before the message is handed over (no connection, MAIL or
every RCPT refused) are RetryableError (4xx) / PermanentError (5xx) and never
reach ``before_data`` (the job's side-effect marker); a failure after
``DATA`` went out (the connection dropped, no answer in time, a 4xx/5xx answer
to the end of the message) is ExternalOutcomeUnconfirmed, with the message
sent exactly once."""

from __future__ import annotations

import email
from email.message import EmailMessage
from email.policy import default
from typing import Any

import pytest

from flowledger.errors import (
    ExternalOutcomeUnconfirmed,
    LeaseLostError,
    PermanentError,
    RetryableError,
)
from flowledger.notify.email import COMPENSATION_SUBJECT, send_email
from flowledger.settings import Settings
from tests.notify.conftest import free_port
from tests.notify.servers import Collector


async def test_email_reaches_smtp_server_with_utf8_subject(
    smtp: Collector, smtp_settings: Settings
) -> None:
    body = "Instance 42 failed at node pay.\n补偿失败 请处理。"
    await send_email(
        smtp_settings,
        to=["ops@example.com", "lead@example.com"],
        subject=COMPENSATION_SUBJECT,
        body=body,
    )
    assert len(smtp.envelopes) == 1
    envelope = smtp.envelopes[0]
    assert envelope.mail_from == "flowledger@localhost"
    assert envelope.rcpt_tos == ["ops@example.com", "lead@example.com"]
    message = email.message_from_bytes(envelope.original_content, policy=default)
    assert isinstance(message, EmailMessage)
    assert message["Subject"] == "process compensation failure notice (流程补偿失败通知)"
    assert message["To"] == "ops@example.com, lead@example.com"
    content = message.get_body(("plain",))
    assert content is not None
    assert content.get_content().replace("\r\n", "\n").rstrip("\n") == body
    assert b"=?utf-8?" in envelope.original_content.lower()  # RFC 2047 encoded subject


async def test_connection_refused_is_retryable() -> None:
    settings = Settings(smtp_host="127.0.0.1", smtp_port=free_port(), smtp_timeout_s=2)
    with pytest.raises(RetryableError):
        await send_email(settings, to=["a@example.com"], subject="s", body="b")


async def test_recipient_refused_5xx_is_permanent(smtp: Collector, smtp_settings: Settings) -> None:
    smtp.refuse["nobody@example.com"] = "550 5.1.1 no such user"
    with pytest.raises(PermanentError, match="550"):
        await send_email(smtp_settings, to=["nobody@example.com"], subject="s", body="b")
    assert smtp.envelopes == []


async def test_recipient_refused_4xx_is_retryable(smtp: Collector, smtp_settings: Settings) -> None:
    smtp.refuse["busy@example.com"] = "450 4.2.1 mailbox busy"
    with pytest.raises(RetryableError, match="450"):
        await send_email(smtp_settings, to=["busy@example.com"], subject="s", body="b")


async def test_partial_refusal_is_permanent_and_not_resent(
    smtp: Collector, smtp_settings: Settings
) -> None:
    smtp.refuse["nobody@example.com"] = "550 5.1.1 no such user"
    with pytest.raises(PermanentError, match="others received it"):
        await send_email(
            smtp_settings, to=["ok@example.com", "nobody@example.com"], subject="s", body="b"
        )
    assert [e.rcpt_tos for e in smtp.envelopes] == [["ok@example.com"]]


async def test_bad_input_is_permanent(smtp: Collector, smtp_settings: Settings) -> None:
    with pytest.raises(PermanentError):
        await send_email(smtp_settings, to=[" "], subject="s", body="b")
    with pytest.raises(PermanentError):
        await send_email(smtp_settings, to=["a@example.com"], subject="a\r\nBcc: x@y", body="b")
    assert smtp.envelopes == []


class Marks:
    """A ``before_data`` hook that counts its calls (the job's marker)."""

    def __init__(self) -> None:
        self.count = 0

    async def __call__(self) -> None:
        self.count += 1


async def test_before_data_runs_once_before_a_delivered_message_L17(
    smtp: Collector, smtp_settings: Settings
) -> None:
    marks = Marks()
    await send_email(smtp_settings, to=["a@example.com"], subject="s", body="b", before_data=marks)
    assert (marks.count, smtp.data_attempts, len(smtp.envelopes)) == (1, 1, 1)


@pytest.mark.parametrize(
    ("setup", "error", "text"),
    [
        ({"refuse": {"busy@example.com": "450 4.2.1 mailbox busy"}}, RetryableError, "450"),
        ({"refuse": {"busy@example.com": "550 5.1.1 no such user"}}, PermanentError, "550"),
        ({"refuse_sender": "451 4.3.0 try later"}, RetryableError, "451"),
        ({"refuse_sender": "553 5.7.1 sender not allowed"}, PermanentError, "553"),
    ],
    ids=["rcpt-4xx", "rcpt-5xx", "mail-4xx", "mail-5xx"],
)
async def test_a_refusal_before_data_is_not_handed_over_L17(
    smtp: Collector,
    smtp_settings: Settings,
    setup: dict[str, Any],
    error: type[Exception],
    text: str,
) -> None:
    for name, value in setup.items():
        setattr(smtp, name, value)
    marks = Marks()
    with pytest.raises(error, match=text) as raised:
        await send_email(
            smtp_settings, to=["busy@example.com"], subject="s", body="b", before_data=marks
        )
    assert not isinstance(raised.value, ExternalOutcomeUnconfirmed)
    assert (marks.count, smtp.data_attempts) == (0, 0)


async def test_connection_refused_never_reaches_before_data_L17() -> None:
    settings = Settings(smtp_host="127.0.0.1", smtp_port=free_port(), smtp_timeout_s=2)
    marks = Marks()
    with pytest.raises(RetryableError):
        await send_email(settings, to=["a@example.com"], subject="s", body="b", before_data=marks)
    assert marks.count == 0


@pytest.mark.parametrize(
    ("setup", "text"),
    [
        ({"drop_after_data": True}, "Disconnected"),
        ({"data_reply": "451 4.3.0 queue trouble"}, "451"),
        ({"data_reply": "554 5.6.0 message refused"}, "554"),
        ({"stall_after_data_s": 2.0}, "Timeout"),
    ],
    ids=["dropped", "451", "554", "timeout"],
)
async def test_a_failure_after_data_is_unconfirmed_L17(
    smtp: Collector, smtp_settings: Settings, setup: dict[str, Any], text: str
) -> None:
    for name, value in setup.items():
        setattr(smtp, name, value)
    settings = smtp_settings.model_copy(update={"smtp_timeout_s": 0.5})
    marks = Marks()
    with pytest.raises(ExternalOutcomeUnconfirmed, match=text) as raised:
        await send_email(settings, to=["a@example.com"], subject="s", body="b", before_data=marks)
    assert "may have been delivered" in raised.value.message
    assert (marks.count, smtp.data_attempts) == (1, 1)


async def test_a_failing_before_data_hook_sends_nothing(
    smtp: Collector, smtp_settings: Settings
) -> None:
    async def lease_lost() -> None:
        raise LeaseLostError("the job is someone else's now")

    with pytest.raises(LeaseLostError):
        await send_email(
            smtp_settings, to=["a@example.com"], subject="s", body="b", before_data=lease_lost
        )
    assert smtp.data_attempts == 0
