"""Email over SMTP (SPEC X-7, C-4) with aiosmtplib.

:func:`send_email` sends one UTF-8 plain-text message from
``settings.smtp_from`` to every recipient in one SMTP transaction. Headers
are encoded by :mod:`email` (non-ASCII subjects become RFC 2047 encoded
words). STARTTLS is used only when ``smtp_starttls`` is set (and then
required); credentials are used only when ``smtp_username`` is set.

Failures map to the job-control errors:

- no connection, a timeout, a dropped connection, or any 4xx reply
  (temporary) → :class:`~flowledger.errors.RetryableError`;
- a 5xx reply (recipient, sender or data refused, authentication), an
  invalid message, or only *some* recipients refused (the others already
  received it, so a resend would duplicate) →
  :class:`~flowledger.errors.PermanentError`.
"""

from __future__ import annotations

from email.message import EmailMessage
from email.utils import formatdate, make_msgid

import aiosmtplib

from flowledger.errors import PermanentError, RetryableError
from flowledger.settings import Settings

COMPENSATION_SUBJECT = "process compensation failure notice (流程补偿失败通知)"


def build_message(sender: str, to: list[str], subject: str, body: str) -> EmailMessage:
    """The message as sent; PermanentError when a header cannot be built
    (e.g. a line break in the subject)."""
    message = EmailMessage()
    try:
        message["From"] = sender
        message["To"] = ", ".join(to)
        message["Subject"] = subject
    except ValueError as exc:
        raise PermanentError(f"invalid email header: {exc}") from None
    message["Date"] = formatdate(localtime=False, usegmt=True)
    message["Message-ID"] = make_msgid(domain=sender.rpartition("@")[2] or None)
    message.set_content(body, charset="utf-8")
    return message


def _classify(exc: aiosmtplib.SMTPResponseException) -> RetryableError | PermanentError:
    text = f"SMTP {exc.code}: {exc.message}"
    if 400 <= exc.code < 500:
        return RetryableError(text)
    return PermanentError(text)


async def send_email(settings: Settings, *, to: list[str], subject: str, body: str) -> None:
    """Send ``body`` with ``subject`` to every address in ``to``."""
    recipients = [address.strip() for address in to if address.strip()]
    if not recipients:
        raise PermanentError("an email needs at least one recipient")
    message = build_message(settings.smtp_from, recipients, subject, body)
    try:
        refused, _ = await aiosmtplib.send(
            message,
            sender=settings.smtp_from,
            recipients=recipients,
            hostname=settings.smtp_host,
            port=settings.smtp_port,
            username=settings.smtp_username or None,
            password=settings.smtp_password or None,
            start_tls=settings.smtp_starttls,
            timeout=settings.smtp_timeout_s,
        )
    except aiosmtplib.SMTPRecipientsRefused as exc:  # every recipient refused
        codes = [r.code for r in exc.recipients]
        text = "; ".join(f"{r.recipient}: {r.code} {r.message}" for r in exc.recipients)
        if codes and all(400 <= code < 500 for code in codes):
            raise RetryableError(f"recipients refused temporarily: {text}") from None
        raise PermanentError(f"recipients refused: {text}") from None
    except aiosmtplib.SMTPResponseException as exc:
        raise _classify(exc) from None
    except aiosmtplib.SMTPNotSupported as exc:
        raise PermanentError(f"SMTP server does not support: {exc}") from None
    except (aiosmtplib.SMTPException, OSError, TimeoutError) as exc:
        # connect errors, timeouts and disconnects (SMTPConnectError is an OSError)
        raise RetryableError(f"SMTP {settings.smtp_host}:{settings.smtp_port}: {exc}") from None
    if refused:
        # some recipients got it; a retry would send it to them again
        text = "; ".join(f"{addr}: {resp.code} {resp.message}" for addr, resp in refused.items())
        raise PermanentError(f"some recipients refused (the others received it): {text}")
