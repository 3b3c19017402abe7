"""Connector calls from jobs (SPEC X-3, X-4): the public entry point
:func:`call_connector`.

A connector is a named outbound target of a tenant (base URL, auth, rate
limit, circuit breaker, default headers; stored by
:mod:`~flowledger.outbound.connector_store`). A call names the connector by
key and gives a *relative* path; in order:

1. the connector is loaded (unknown → ``connector_not_found``, disabled →
   ``connector_disabled``; both permanent);
2. the path is joined to the base URL and refused if it could leave it
   (``connector_path_refused``, permanent; :mod:`.connector_paths`);
3. the body is encoded once; the auth headers are computed over exactly
   those bytes (:mod:`.connector_auth`; the secret is decrypted here);
4. the rate limit is checked — limited: nothing is sent,
   ``connector_rate_limited`` (retryable, ``next_retry_delay_ms`` = when a
   call will be allowed);
5. the circuit breaker is checked — open: nothing is sent,
   ``connector_circuit_open`` (retryable, delay = until it half-opens);
6. the request goes through :func:`~flowledger.outbound.job_calls.call_from_job`,
   so the SSRF guard, ``X-Idempotency-Key``, the side-effect marker and the
   L-17 classification stay in one place; the auth headers are redacted
   from the attempt records (``records.redacting``);
7. the outcome feeds the breaker (:mod:`.connector_guards`; the guards,
   client and secret box are those of the caller's
   :class:`~flowledger.outbound.resources.Outbound`) and one
   ``connector_calls`` audit row is written in its own short transaction
   (outcome ``ok`` or the error code) — for every ending once the connector
   is found, refusals included (disabled, path, rate limit, open circuit,
   unreadable secret), so the audit shows what was *not* sent too.

The result and every error are those of ``call_from_job`` (the outbound
error classes) or the ``Connector*`` errors of
:mod:`.connector_errors`. Headers: the connector's default headers, then
the call's own, then the auth headers (later ones win, names compared
case-insensitively).

A failure to write the audit row is logged and does not change the call's
outcome: the external call already happened and must be settled as such.
A call cancelled mid-flight (worker shutdown) leaves no audit row. Secrets
never reach a log line, an error message or an audit row.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

import structlog

from flowledger.errors import FlowledgerError, PermanentError
from flowledger.outbound.attempt import CallAttempt
from flowledger.outbound.connector_auth import auth_headers
from flowledger.outbound.connector_errors import (
    ConnectorCircuitOpen,
    ConnectorDisabled,
    ConnectorInvalid,
    ConnectorKeyTaken,
    ConnectorNotFound,
    ConnectorPathRefused,
    ConnectorRateLimited,
    ConnectorSecretUnreadable,
)
from flowledger.outbound.connector_guards import (
    OpenedState,
    breaker_call,
    reopen_delay_ms,
)
from flowledger.outbound.connector_paths import resolve_path
from flowledger.outbound.connector_store import Connector, get_connector_by_key, record_call
from flowledger.outbound.job_calls import (
    OutboundRequest,
    OutboundResult,
    call_from_job,
    encode_body,
)
from flowledger.outbound.records import redact_url, redacting
from flowledger.outbound.resources import Outbound

__all__ = [
    "ConnectorCircuitOpen",
    "ConnectorDisabled",
    "ConnectorInvalid",
    "ConnectorKeyTaken",
    "ConnectorNotFound",
    "ConnectorPathRefused",
    "ConnectorRateLimited",
    "ConnectorSecretUnreadable",
    "call_connector",
]

log = structlog.get_logger("flowledger.outbound.connectors")


def _merge(*layers: Mapping[str, str]) -> dict[str, str]:
    """Header layers merged; a later layer replaces a name case-insensitively."""
    out: dict[str, str] = {}
    names: dict[str, str] = {}
    for layer in layers:
        for name, value in layer.items():
            old = names.get(name.lower())
            if old is not None:
                del out[old]
            out[name] = value
            names[name.lower()] = name
    return out


async def _load(ctx: CallAttempt, tenant_id: str, key: str) -> Connector:
    async with ctx.db.read() as conn:
        connector = await get_connector_by_key(conn, tenant=tenant_id, key=key)
    if connector is None:
        raise ConnectorNotFound(
            f"no connector {key!r} in tenant {tenant_id!r}", field="connectorId"
        )
    return connector


async def _send(
    ctx: CallAttempt,
    connector: Connector,
    method: str,
    request: OutboundRequest,
    outbound: Outbound,
) -> OutboundResult:
    """Steps 1-6 of the module docstring, for a loaded connector."""
    if not connector.enabled:
        raise ConnectorDisabled(f"connector {connector.key!r} is disabled; nothing was sent")
    url = resolve_path(connector.base_url, request.url)
    try:
        content, content_type = encode_body(request.body)
    except (TypeError, ValueError) as exc:
        raise PermanentError(f"cannot encode the connector request: {exc}") from None
    auth = auth_headers(
        connector.auth_kind,
        secret=connector.secret(outbound.secrets),
        username=connector.username,
        header_name=connector.header_name,
        body=content or b"",
        timestamp=int(ctx.clock.now().timestamp()),
    )
    implied = {"Content-Type": content_type} if content_type else {}
    headers = _merge(implied, connector.default_headers, request.headers, auth.headers)
    delay = await outbound.guards.acquire(connector.id, connector.rate_limit)
    if delay is not None:
        raise ConnectorRateLimited(
            f"connector {connector.key!r} is rate limited; nothing was sent",
            next_retry_delay_ms=delay,
        )
    settings = connector.circuit_breaker
    breaker = await outbound.guards.breaker(connector.id, settings)
    sent = OutboundRequest(method, url, headers, content, request.idempotent)
    try:
        async with breaker_call(breaker):  # an SSRF refusal counts as nothing
            with redacting(auth.secret_names):
                return await call_from_job(ctx, sent, client=outbound.client)
    except OpenedState as opened:
        raise ConnectorCircuitOpen(
            f"the circuit breaker of connector {connector.key!r} is open; nothing was sent",
            next_retry_delay_ms=reopen_delay_ms(opened, settings),
        ) from None


def _status_of(exc: BaseException) -> int | None:
    response = getattr(exc, "response", None)
    status = response.get("status") if isinstance(response, dict) else None
    return status if isinstance(status, int) else None


async def _audit(
    ctx: CallAttempt,
    connector: Connector,
    *,
    method: str,
    path: str,
    status: int | None,
    outcome: str,
    duration_ms: int,
) -> None:
    job = ctx.job
    log.info(
        "connector_call",
        connector_id=connector.id,
        connector_key=connector.key,
        tenant_id=connector.tenant_id,
        job_id=job.id,
        method=method,
        path=path,
        status=status,
        outcome=outcome,
        duration_ms=duration_ms,
        trace_id=job.trace_id,
    )
    try:
        async with ctx.db.begin() as conn:
            await record_call(
                conn,
                connector,
                job_id=job.id,
                instance_id=job.instance_id,
                method=method,
                path=path,
                status=status,
                outcome=outcome,
                duration_ms=duration_ms,
                now=ctx.clock.now(),
            )
    except Exception:
        log.exception("connector_call_audit_failed", connector_id=connector.id, job_id=job.id)


async def call_connector(
    ctx: CallAttempt,
    *,
    tenant_id: str,
    connector_key: str,
    request: OutboundRequest,
    outbound: Outbound,
) -> OutboundResult:
    """Send ``request`` (``request.url`` is a path relative to the connector's
    base URL) through the connector ``connector_key`` of ``tenant_id`` on
    behalf of the job of ``ctx``; see the module docstring."""
    connector = await _load(ctx, tenant_id, connector_key)
    method = request.method.upper()
    path = redact_url(request.url)
    started = time.monotonic()
    try:
        result = await _send(ctx, connector, method, request, outbound)
    except Exception as exc:
        outcome = exc.code if isinstance(exc, FlowledgerError) else type(exc).__name__
        await _audit(
            ctx,
            connector,
            method=method,
            path=path,
            status=_status_of(exc),
            outcome=outcome,
            duration_ms=int((time.monotonic() - started) * 1000),
        )
        raise
    await _audit(
        ctx,
        connector,
        method=method,
        path=path,
        status=result.status,
        outcome="ok",
        duration_ms=int((time.monotonic() - started) * 1000),
    )
    return result
