"""Notification channels (SPEC X-7), shared by task notifications,
compensation actions (C-4) and alerts.

- :mod:`~flowledger.notify.messages` — in-app messages: a row in
  ``workflow_messages`` written in the caller's transaction, and the
  "my messages" queries (keyset paged, unread filter, mark read).
- :mod:`~flowledger.notify.email` — email over SMTP with aiosmtplib.
- :mod:`~flowledger.notify.sms` — SMS through a pluggable
  :class:`~flowledger.notify.sms.SmsGateway`; one real implementation
  posts JSON to an HTTP gateway through the SSRF-guarded outbound client.

Failures of the remote channels raise the job-control errors of
:mod:`flowledger.errors` (``RetryableError`` / ``PermanentError``) so a job
handler can let them settle the job. This package never imports the API or
the CLI, and imports nothing at package level.
"""
