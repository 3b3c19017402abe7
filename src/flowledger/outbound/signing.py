"""HMAC-SHA256 request signatures, one scheme for both directions (SPEC X-2,
X-5): webhook deliveries that flowledger sends and callbacks that external
systems send to it.

A signed request carries two headers::

    X-Flowledger-Timestamp: 1764410000              (unix seconds)
    X-Flowledger-Signature: sha256=<hex>

where ``<hex>`` is ``HMAC-SHA256(secret, f"{timestamp}.".encode() + body)``
over the raw body bytes exactly as sent. A receiver recomputes it with the
shared secret, compares in constant time, and refuses timestamps older (or
newer) than its tolerance, which stops replays of a captured request.

Callbacks to flowledger also bind the request line: with ``context`` (the
method and path, ``"POST /api/workflows/callbacks/external/42"``) the MAC is
over ``f"{timestamp}.{context}.".encode() + body``, so a signed decision for
one task cannot be replayed against another, and a signed request that
flowledger sent (a webhook, a dispatch) can never pass as a callback.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping

TIMESTAMP_HEADER = "X-Flowledger-Timestamp"
SIGNATURE_HEADER = "X-Flowledger-Signature"
_PREFIX = "sha256="
_DIGITS = re.compile(r"[0-9]{1,12}")  # ASCII only: "²".isdigit() is True


class SignatureInvalid(Exception):
    """Why a signature was refused; ``reason`` is a short machine code."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def signature(secret: str, timestamp: int, body: bytes, *, context: str | None = None) -> str:
    """The ``X-Flowledger-Signature`` value for ``body`` sent at ``timestamp``
    (bound to ``context`` when given)."""
    prefix = f"{timestamp}." if context is None else f"{timestamp}.{context}."
    mac = hmac.new(secret.encode(), prefix.encode() + body, hashlib.sha256)
    return _PREFIX + mac.hexdigest()


def sign_headers(
    secret: str, timestamp: int, body: bytes, *, context: str | None = None
) -> dict[str, str]:
    """Both headers of a signed request."""
    return {
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret, timestamp, body, context=context),
    }


def verify(
    secret: str,
    headers: Mapping[str, str],
    body: bytes,
    *,
    now: float,
    tolerance_s: int,
    context: str | None = None,
) -> None:
    """Raise :class:`SignatureInvalid` unless ``headers`` sign ``body`` (and
    ``context``) with ``secret`` at a timestamp within ``tolerance_s`` of
    ``now``. ``headers`` lookups must be case-insensitive (as Starlette's and
    httpx's are)."""
    stamp = (headers.get(TIMESTAMP_HEADER) or "").strip()
    given = (headers.get(SIGNATURE_HEADER) or "").strip()
    if not stamp or not given:
        raise SignatureInvalid(
            "signature_missing", f"{TIMESTAMP_HEADER} and {SIGNATURE_HEADER} are required"
        )
    if not _DIGITS.fullmatch(stamp):
        raise SignatureInvalid("timestamp_invalid", f"{TIMESTAMP_HEADER} must be unix seconds")
    if abs(now - int(stamp)) > tolerance_s:
        raise SignatureInvalid(
            "timestamp_out_of_tolerance",
            f"{TIMESTAMP_HEADER} is more than {tolerance_s}s away from the server's time",
        )
    expected = signature(secret, int(stamp), body, context=context)
    if not hmac.compare_digest(given.encode(), expected.encode()):
        raise SignatureInvalid("signature_mismatch", "the signature does not match the body")
