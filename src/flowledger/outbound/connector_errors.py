"""The errors of connectors (SPEC X-3), shared by the store, the call path
and the API. Job-side refusals steer settlement (permanent → dead,
retryable → pending with ``next_retry_delay_ms``); the API maps the same
classes once (404 / 409 / 422) through their bases."""

from __future__ import annotations

from flowledger.errors import (
    ConflictError,
    Deferred,
    FlowledgerError,
    NotFoundError,
    PermanentError,
)


class ConnectorNotFound(PermanentError, NotFoundError):
    """No connector with that key (job side) or id (API) in the caller's
    tenants. Permanent for a job, 404 for the API."""

    code = "connector_not_found"


class ConnectorKeyTaken(ConflictError):
    """Another connector of the tenant already has this key (409)."""

    code = "connector_key_taken"


class ConnectorInvalid(FlowledgerError):
    """A connector setting is invalid; ``field`` names it (422)."""

    code = "connector_invalid"


class ConnectorDisabled(PermanentError):
    """The connector exists but is disabled; nothing was sent."""

    code = "connector_disabled"


class ConnectorPathRefused(PermanentError):
    """The call's path is not a relative path under the connector's base URL
    (``//host``, an absolute URL, a ``..`` escape …); nothing was sent."""

    code = "connector_path_refused"


class ConnectorSecretUnreadable(PermanentError):
    """The stored credential cannot be decrypted with the configured key;
    nothing was sent. Fix ``FLOWLEDGER_SECRET_KEY``, then retry the job."""

    code = "connector_secret_unreadable"


class ConnectorRateLimited(Deferred):
    """The connector's rate limit refused the call; nothing was sent."""

    code = "connector_rate_limited"


class ConnectorCircuitOpen(Deferred):
    """The connector's circuit breaker is open; nothing was sent."""

    code = "connector_circuit_open"
