"""Redaction of secrets in what the diagnostics show (SPEC O-10, O-7): job
payloads, attempt requests and responses, audit details. Any mapping key
that names a secret (``Authorization``, ``apiKey``, ``password``, a header
``X-Api-Key`` …, by :func:`flowledger.outbound.records.is_secret`) has its
value replaced by ``[redacted]``; URLs have secret query parameters masked.
The attempt records are already redacted when written; this is the second
line for payloads rendered before a call and for anything older. Only
string values are secrets: ids under a secret-looking name (``tokenId``)
stay."""

from __future__ import annotations

from typing import Any

from flowledger.outbound.records import REDACTED, is_secret, redact_url

_URL_KEYS = frozenset({"url", "targetUrl", "target_url"})


def redact(value: Any) -> Any:
    """A copy of ``value`` (JSON-like) with every secret replaced."""
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            if isinstance(key, str) and is_secret(key) and isinstance(item, str) and item:
                out[key] = REDACTED
            elif isinstance(key, str) and key in _URL_KEYS and isinstance(item, str):
                out[key] = redact_url(item)
            else:
                out[key] = redact(item)
        return out
    if isinstance(value, list):
        return [redact(item) for item in value]
    return value
