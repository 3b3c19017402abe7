"""Redaction of secrets in what the diagnostics show (SPEC O-10, O-7): job
payloads, attempt requests and responses, audit details. Any mapping key
that names a secret (``Authorization``, ``apiKey``, ``password``, a header
``X-Api-Key`` …, by :func:`flowledger.outbound.records.is_secret`) has its
value replaced by ``[redacted]``; URLs have secret query parameters masked.
The attempt records are already redacted when written; this is the second
line for payloads rendered before a call and for anything older. Only
string values are secrets: ids under a secret-looking name (``tokenId``)
stay. A change of an intervention (``{field, before, after}``, issue 31)
whose field names a secret (``form.password``: its last dotted part) has
its ``before`` and ``after`` strings replaced the same way."""

from __future__ import annotations

from typing import Any

from flowledger.outbound.records import REDACTED, is_secret, redact_url

_URL_KEYS = frozenset({"url", "targetUrl", "target_url"})
_CHANGE_VALUES = ("before", "after")


def _secret_change(value: dict[Any, Any]) -> bool:
    name = value.get("field")
    return (
        isinstance(name, str)
        and set(value) >= {"field", *_CHANGE_VALUES}
        and is_secret(name.rsplit(".", 1)[-1])
    )


def redact(value: Any) -> Any:
    """A copy of ``value`` (JSON-like) with every secret replaced."""
    if isinstance(value, dict):
        out: dict[Any, Any] = {}
        secret_change = _secret_change(value)
        for key, item in value.items():
            secret = (secret_change and key in _CHANGE_VALUES) or (
                isinstance(key, str) and is_secret(key)
            )
            if secret and isinstance(item, str) and item:
                out[key] = REDACTED
            elif isinstance(key, str) and key in _URL_KEYS and isinstance(item, str):
                out[key] = redact_url(item)
            else:
                out[key] = redact(item)
        return out
    if isinstance(value, list):
        return [redact(item) for item in value]
    return value
