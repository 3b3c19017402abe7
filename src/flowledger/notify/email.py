"""Email over SMTP (SPEC X-7, C-4, L-17) with aiosmtplib.

:func:`send_email` sends one UTF-8 plain-text message from
``settings.smtp_from`` to every recipient in one SMTP transaction. Headers
are encoded by :mod:`email` (non-ASCII subjects become RFC 2047 encoded
words). STARTTLS is used only when ``smtp_starttls`` is set (and then
required); credentials are used only when ``smtp_username`` is set.

The message is handed over when the ``DATA`` command goes out; a job passes
``before_data=ctx.mark_side_effect`` so the L-17 side-effect marker is
recorded right then — after the server accepted the sender and the
recipients, before anything of the message is sent. Failures map to the
job-control errors by when they happen:

- before the hand-over (nothing was delivered): no connection, a connect or
  command timeout, a dropped connection, or a 4xx reply to the greeting,
  EHLO/HELO, STARTTLS, AUTH, MAIL or RCPT (every recipient refused
  temporarily) → :class:`~flowledger.errors.RetryableError`; a 5xx reply
  there (sender or every recipient refused, authentication refused), a
  needed extension the server lacks, or an invalid message →
  :class:`~flowledger.errors.PermanentError`;
- after the hand-over started: a dropped connection, a timeout, or a 4xx/5xx
  answer to ``DATA`` or to the end of the message — the server may have
  queued it, and some servers deliver what they then refuse →
  :class:`~flowledger.errors.ExternalOutcomeUnconfirmed` (the L-17 dead
  letter: never resent automatically). aiosmtplib sends the ``DATA`` command
  and the message as one step, so a refusal of the ``DATA`` command itself is
  also taken as unconfirmed (erring on the side of not sending twice);
- delivered, but only *some* recipients had been accepted (the others
  received it, so a resend would duplicate) → ``PermanentError``.

A failure of ``QUIT`` after the message was accepted changes nothing.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from email.message import EmailMessage
from email.utils import formatdate, make_msgid
from typing import Literal

import aiosmtplib
from aiosmtplib.typing import Default

from flowledger.errors import (
    ExternalOutcomeUnconfirmed,
    JobControlError,
    PermanentError,
    RetryableError,
)
from flowledger.settings import Settings

COMPENSATION_SUBJECT = "process compensation failure notice (流程补偿失败通知)"

BeforeData = Callable[[], Awaitable[None]]
_FAILURES = (aiosmtplib.SMTPException, OSError, TimeoutError)


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


class _HandOverSMTP(aiosmtplib.SMTP):
    """aiosmtplib's client that notes when the hand-over starts: it runs
    ``before_data`` and sets :attr:`handed_over` just before ``DATA``."""

    def __init__(self, settings: Settings, before_data: BeforeData | None) -> None:
        super().__init__(
            hostname=settings.smtp_host,
            port=settings.smtp_port,
            username=settings.smtp_username or None,
            password=settings.smtp_password or None,
            start_tls=settings.smtp_starttls,
            timeout=settings.smtp_timeout_s,
        )
        self._before_data = before_data
        self.handed_over = False

    async def data(
        self,
        message: str | bytes,
        /,
        *,
        timeout: float | Literal[Default.token] | None = Default.token,  # noqa: ASYNC109 (aiosmtplib's)
    ) -> aiosmtplib.SMTPResponse:
        if self._before_data is not None:
            await self._before_data()
        self.handed_over = True
        return await super().data(message, timeout=timeout)


def _before_hand_over(exc: BaseException, where: str) -> JobControlError:
    """What a failure before ``DATA`` means (nothing was delivered)."""
    if isinstance(exc, aiosmtplib.SMTPRecipientsRefused):  # every recipient refused
        codes = [r.code for r in exc.recipients]
        text = "; ".join(f"{r.recipient}: {r.code} {r.message}" for r in exc.recipients)
        if codes and all(400 <= code < 500 for code in codes):
            return RetryableError(f"recipients refused temporarily: {text}")
        return PermanentError(f"recipients refused: {text}")
    if isinstance(exc, aiosmtplib.SMTPResponseException):
        text = f"{where} answered {exc.code}: {exc.message}"
        return RetryableError(text) if 400 <= exc.code < 500 else PermanentError(text)
    if isinstance(exc, aiosmtplib.SMTPNotSupported):
        return PermanentError(f"{where} does not support: {exc}")
    # connect errors, timeouts and disconnects (SMTPConnectError is an OSError)
    return RetryableError(f"{where}: {type(exc).__name__}: {exc}")


def _after_hand_over(exc: BaseException, where: str) -> ExternalOutcomeUnconfirmed:
    if isinstance(exc, aiosmtplib.SMTPResponseException):
        what = f"answered {exc.code}: {exc.message}"
    else:
        what = f"{type(exc).__name__}: {exc}".rstrip(": ")
    return ExternalOutcomeUnconfirmed(
        f"{where}: the message was handed over but not confirmed ({what}); "
        "it may have been delivered"
    )


async def send_email(
    settings: Settings,
    *,
    to: list[str],
    subject: str,
    body: str,
    before_data: BeforeData | None = None,
) -> None:
    """Send ``body`` with ``subject`` to every address in ``to``;
    ``before_data`` runs once, just before the message is handed over."""
    recipients = [address.strip() for address in to if address.strip()]
    if not recipients:
        raise PermanentError("an email needs at least one recipient")
    message = build_message(settings.smtp_from, recipients, subject, body)
    where = f"SMTP {settings.smtp_host}:{settings.smtp_port}"
    smtp = _HandOverSMTP(settings, before_data)
    try:
        await smtp.connect()
        refused, _ = await smtp.send_message(
            message, sender=settings.smtp_from, recipients=recipients
        )
    except _FAILURES as exc:
        smtp.close()
        if smtp.handed_over:
            raise _after_hand_over(exc, where) from None
        raise _before_hand_over(exc, where) from None
    try:
        await smtp.quit()
    except _FAILURES:
        pass  # the message was accepted; how the session ends does not matter
    finally:
        smtp.close()
    if refused:
        # some recipients got it; a retry would send it to them again
        text = "; ".join(f"{addr}: {resp.code} {resp.message}" for addr, resp in refused.items())
        raise PermanentError(f"some recipients refused (the others received it): {text}")
