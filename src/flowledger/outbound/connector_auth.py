"""How a connector authenticates a call (SPEC X-3): the headers each auth
kind adds, and the names of those that carry secrets (the call path redacts
them in the attempt records, see :func:`flowledger.outbound.records.redacting`).

==========  ============================================================
``none``    nothing
``bearer``  ``Authorization: Bearer <token>``
``basic``   ``Authorization: Basic base64(username:password)`` (RFC 7617,
            UTF-8)
``api_key`` ``<headerName>: <key>``
``hmac``    ``X-Flowledger-Timestamp`` and ``X-Flowledger-Signature`` over
            the exact body bytes sent (:mod:`flowledger.outbound.signing`);
            the secret itself never leaves the process
==========  ============================================================

Auth headers are applied last, so neither default headers nor the call's
own headers can replace them.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass

from flowledger.outbound.signing import SIGNATURE_HEADER, sign_headers

AUTHORIZATION = "Authorization"


@dataclass(frozen=True)
class AuthHeaders:
    """Headers to add and the names among them that must be redacted."""

    headers: dict[str, str]
    secret_names: frozenset[str]


def auth_headers(
    kind: str,
    *,
    secret: str | None,
    username: str | None,
    header_name: str | None,
    body: bytes,
    timestamp: int,
) -> AuthHeaders:
    """The auth headers of one call; ``body`` is exactly what will be sent."""
    if kind == "none":
        return AuthHeaders({}, frozenset())
    if secret is None:
        raise ValueError(f"auth kind {kind} needs a secret")
    if kind == "bearer":
        return AuthHeaders({AUTHORIZATION: f"Bearer {secret}"}, frozenset({AUTHORIZATION}))
    if kind == "basic":
        pair = base64.b64encode(f"{username}:{secret}".encode()).decode("ascii")
        return AuthHeaders({AUTHORIZATION: f"Basic {pair}"}, frozenset({AUTHORIZATION}))
    if kind == "api_key":
        if not header_name:
            raise ValueError("auth kind api_key needs a header name")
        return AuthHeaders({header_name: secret}, frozenset({header_name}))
    if kind == "hmac":
        return AuthHeaders(sign_headers(secret, timestamp, body), frozenset({SIGNATURE_HEADER}))
    raise ValueError(f"unknown auth kind {kind!r}")
