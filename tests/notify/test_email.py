"""Email over SMTP (SPEC X-7): a real aiosmtpd server receives the message;
failures map to RetryableError / PermanentError."""

from __future__ import annotations

import email
from email.message import EmailMessage
from email.policy import default

import pytest

from flowledger.errors import PermanentError, RetryableError
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
