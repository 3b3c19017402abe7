"""Where a connector call may go (SPEC X-3): only to its own origin, under
its base URL's path prefix.

:func:`resolve_path` joins a connector's base URL and a call's relative path
and refuses, with
:class:`~flowledger.outbound.connector_errors.ConnectorPathRefused`, anything
that could leave that space:

- a path that does not start with ``/``, or starts with ``//`` (a
  scheme-relative URL naming another host), or is an absolute URL;
- backslashes, whitespace or control characters (servers and proxies
  disagree about them);
- ``.`` or ``..`` segments, also percent-encoded (``%2e%2e``, ``..%2f``): a
  receiver that decodes before normalising would climb out of the prefix;
- a fragment (never sent anyway).

After joining, the URL is parsed again (httpx normalises it as it will be
sent) and must keep the base URL's scheme, host, port and path prefix. The
query string is the caller's.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

import httpx

from flowledger.outbound.connector_errors import ConnectorPathRefused

_FORBIDDEN = re.compile(r"[\x00-\x20\x7f\\]")
_FORBIDDEN_DECODED = re.compile(r"[\x00-\x1f\x7f\\]")


def _refuse(path: str, why: str) -> ConnectorPathRefused:
    shown = path if len(path) <= 200 else path[:200] + "…"
    return ConnectorPathRefused(
        f"connector path {shown!r} refused: {why}; a connector call may only reach "
        "a relative path under its base URL (X-3)"
    )


def resolve_path(base_url: str, path: str) -> str:
    """The absolute URL of ``path`` under ``base_url``; see the module docstring."""
    if not path.startswith("/"):
        raise _refuse(path, "it must be a relative path starting with '/'")
    if path.startswith("//"):
        raise _refuse(path, "'//' would name another host")
    if _FORBIDDEN.search(path):
        raise _refuse(path, "it contains whitespace, control characters or backslashes")
    if "#" in path:
        raise _refuse(path, "it has a fragment")
    raw_path = path.split("?", 1)[0]
    for decoded in (unquote(raw_path), unquote(unquote(raw_path))):
        if _FORBIDDEN_DECODED.search(decoded) or any(s in (".", "..") for s in decoded.split("/")):
            raise _refuse(
                path, "it has '.' or '..' segments (maybe percent-encoded) or encoded backslashes"
            )
    base = httpx.URL(base_url)
    prefix = base.path.rstrip("/")
    try:
        joined = httpx.URL(base_url.rstrip("/") + path)
    except httpx.InvalidURL as exc:
        raise _refuse(path, f"it is not a valid URL path ({exc})") from None
    same_origin = (joined.scheme, joined.host, joined.port) == (base.scheme, base.host, base.port)
    under_prefix = not prefix or joined.path == prefix or joined.path.startswith(prefix + "/")
    if not (same_origin and under_prefix):
        raise _refuse(path, "it leaves the connector's base URL")
    return str(joined)
