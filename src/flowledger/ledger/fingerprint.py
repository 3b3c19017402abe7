"""Error fingerprints for failure clustering (SPEC L-24): an error text with
its variable parts masked — URLs' paths and queries, UUIDs, long hex ids,
timestamps, numbers, quoted values — hashed to a short stable key. It is
computed when an attempt or a job's last error is written, so clustering is
an indexed group-by, never a scan of error texts."""

from __future__ import annotations

import hashlib
import re

_MASKS: list[tuple[re.Pattern[str], str]] = [
    # keep HTTP status codes: a 502 and a 404 are different causes
    (re.compile(r"\b(HTTP|status|code)[ :=]+([1-5]\d\d)\b", re.I), r"\1_\2"),
    (re.compile(r"(https?://[^/\s?#]+)[^\s\"'<>]*"), r"\1/<path>"),
    (
        re.compile(r"\b[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b", re.I),
        "<uuid>",
    ),
    (
        re.compile(r"\b\d{4}-\d{2}-\d{2}[T ]\d{2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?\b"),
        "<time>",
    ),
    (re.compile(r"\b[0-9a-f]{12,}\b", re.I), "<hex>"),
    (re.compile(r"'[^']*'|\"[^\"]*\""), "<value>"),
    (re.compile(r"\b\d+(\.\d+)?\b"), "<n>"),
    (re.compile(r"\s+"), " "),
]


def normalize_error(text: str) -> str:
    """The error text with its variable parts masked (what a cluster shows)."""
    for pattern, replacement in _MASKS:
        text = pattern.sub(replacement, text)
    return text.strip()[:500]


def fingerprint(text: str | None) -> str | None:
    if text is None:
        return None
    return hashlib.sha1(normalize_error(text).encode("utf-8")).hexdigest()[:16]
