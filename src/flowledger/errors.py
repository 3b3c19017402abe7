"""The error hierarchy of flowledger.

Every error raised on purpose derives from :class:`FlowledgerError` and carries
a stable machine-readable ``code``. Job-control errors (what a handler raises
to tell the ledger how to settle) follow the Temporal style: retryable,
permanent, and the L-17 ``external_outcome_unconfirmed`` dead letter. The HTTP
mapping of these codes lives in the API layer, once.
"""

from __future__ import annotations

from typing import Any


class FlowledgerError(Exception):
    """Root of every deliberate flowledger error."""

    code: str = "flowledger_error"

    def __init__(self, message: str, *, field: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details


class ConfigurationError(FlowledgerError):
    code = "configuration_error"


class NotFoundError(FlowledgerError):
    code = "not_found"


class ConflictError(FlowledgerError):
    code = "conflict"


class UnknownJobTypeError(FlowledgerError):
    code = "unknown_job_type"


class InvalidStateError(ConflictError):
    """An operation is not allowed in the object's current state."""

    code = "invalid_state"


# ---------------------------------------------------------------- job control


class LeaseLostError(FlowledgerError):
    """The executor no longer owns the job (old generation, lease taken over,
    job canceled, or its execution deadline passed). Nothing may be written."""

    code = "lease_lost"


class JobControlError(FlowledgerError):
    """Base of the errors a handler raises to steer settlement."""


class RetryableError(JobControlError):
    """A failure worth another attempt (backoff applies unless
    ``next_retry_delay_ms`` is given)."""

    code = "retryable"

    def __init__(self, message: str, *, next_retry_delay_ms: int | None = None) -> None:
        super().__init__(message)
        self.next_retry_delay_ms = next_retry_delay_ms


class Deferred(RetryableError):
    """Nothing was attempted: the job is handed back to run again after
    ``next_retry_delay_ms`` without using an attempt of its budget (a rate
    limit or an open circuit breaker refused to send). The attempt row is
    ``canceled`` with this error's code."""

    code = "deferred"


class PermanentError(JobControlError):
    """A failure that no retry can fix: the job goes dead at once."""

    code = "permanent"


class ExternalOutcomeUnconfirmed(JobControlError):
    """SPEC L-17: an unsafe external write may have taken effect; the job goes
    dead with reason ``external_outcome_unconfirmed`` and is never resent
    automatically."""

    code = "external_outcome_unconfirmed"
