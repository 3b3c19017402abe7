"""What a connector is configured with (SPEC X-3) and the rules that make a
configuration valid. Pure values and checks: no database, no network.

A :class:`ConnectorDraft` is the complete configuration a connector is
created with (or becomes after an update). :func:`check_draft` validates it
and returns it normalised; every refusal is a
:class:`~flowledger.outbound.connector_errors.ConnectorInvalid` naming the
field (camelCase, as the API spells it).

Rules (where the spec is silent, the choice is written here):

- ``key``: like a definition key (``^[A-Za-z][A-Za-z0-9_.-]{0,63}$``), unique
  per tenant; process definitions name it as ``connectorId``.
- ``baseUrl``: ``http`` or ``https`` with a host; no user info, query or
  fragment; a path prefix is allowed (``https://erp.example/api/v1``); no
  ``.``/``..`` segments, backslashes or whitespace. A trailing ``/`` is
  dropped. Whether the host may be reached is decided at call time by the
  SSRF guard (X-4), not here: DNS answers change.
- auth kinds: ``none`` (no credential; ``username``/``headerName``/
  ``secret`` refused), ``bearer`` (secret = token), ``basic`` (``username``
  without ``:`` + secret = password), ``api_key`` (``headerName`` such as
  ``X-Api-Key`` + secret = key), ``hmac`` (secret = HMAC key; requests are
  signed with :mod:`flowledger.outbound.signing`). Every kind but ``none``
  needs a secret. Secrets sent as header values (bearer, API key) must be
  printable ASCII without surrounding spaces.
- ``rateLimit``: optional; ``requestsPerSecond`` in (0, 10000] and
  ``burst`` 1…10000, by default ``ceil(requestsPerSecond)`` (at least 1).
- ``circuitBreaker``: always on; ``failureThreshold`` 1…1000 (default 5)
  consecutive failures open it for ``resetTimeoutS`` (0.1 s … 1 day,
  default 30 s).
- ``defaultHeaders``: at most 50 non-secret headers. Names must be HTTP
  tokens; names that carry credentials (``Authorization``, anything
  :func:`~flowledger.outbound.records.is_secret` calls secret) are refused —
  credentials belong in the auth settings, where they are encrypted — and so
  are the headers flowledger sets itself (``Host``, ``Content-Length``,
  ``X-Idempotency-Key``, the signature headers …).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal
from urllib.parse import unquote, urlsplit

from flowledger.outbound.connector_errors import ConnectorInvalid
from flowledger.outbound.records import is_secret
from flowledger.outbound.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER

AuthKind = Literal["none", "bearer", "basic", "api_key", "hmac"]
AUTH_KINDS: tuple[AuthKind, ...] = ("none", "bearer", "basic", "api_key", "hmac")
SECRET_KINDS = frozenset({"bearer", "basic", "api_key", "hmac"})

KEY_PATTERN = r"^[A-Za-z][A-Za-z0-9_.-]{0,63}$"
HEADER_NAME_PATTERN = r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$"
BASE_URL_MAX = 2048
NAME_MAX = 255
USERNAME_MAX = 255
SECRET_MAX = 4096
HEADER_VALUE_MAX = 1024
DEFAULT_HEADERS_MAX = 50
MAX_RPS = 10_000.0
MAX_BURST = 10_000
MAX_THRESHOLD = 1000
MIN_RESET_S = 0.1
MAX_RESET_S = 86_400.0

RESERVED_HEADERS = frozenset(
    {
        "host",
        "content-length",
        "transfer-encoding",
        "connection",
        "te",
        "upgrade",
        "x-idempotency-key",
        TIMESTAMP_HEADER.lower(),
        SIGNATURE_HEADER.lower(),
    }
)

_KEY = re.compile(KEY_PATTERN)
_HEADER_NAME = re.compile(HEADER_NAME_PATTERN)
_PRINTABLE_ASCII = re.compile(r"^[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?$")
_HEADER_VALUE = re.compile(r"^[\x20-\x7e\t]*$")
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


@dataclass(frozen=True)
class RateLimit:
    """At most ``burst`` calls at once, refilled at ``requests_per_second``."""

    requests_per_second: float
    burst: int


@dataclass(frozen=True)
class BreakerSettings:
    """Open after ``failure_threshold`` consecutive failures; try again
    (half-open) after ``reset_timeout_s``."""

    failure_threshold: int = 5
    reset_timeout_s: float = 30.0


@dataclass(frozen=True)
class ConnectorDraft:
    """A complete connector configuration. ``secret`` is the plain
    credential, held only in memory on its way to being encrypted (None: no
    new secret; on an update the stored one is kept)."""

    key: str
    name: str
    base_url: str
    auth_kind: AuthKind = "none"
    username: str | None = None
    header_name: str | None = None
    secret: str | None = field(default=None, repr=False)
    rate_limit: RateLimit | None = None
    circuit_breaker: BreakerSettings = field(default_factory=BreakerSettings)
    default_headers: Mapping[str, str] = field(default_factory=dict)
    enabled: bool = True


def _invalid(field_name: str, message: str) -> ConnectorInvalid:
    return ConnectorInvalid(message, field=field_name)


def check_base_url(url: str) -> str:
    """``url`` validated as a connector base URL, without a trailing ``/``."""
    if not url or len(url) > BASE_URL_MAX:
        raise _invalid("baseUrl", f"baseUrl must be 1 to {BASE_URL_MAX} characters")
    if _CONTROL.search(url) or any(c.isspace() for c in url) or "\\" in url:
        raise _invalid("baseUrl", "baseUrl must not contain whitespace or backslashes")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        raise _invalid("baseUrl", "baseUrl is not a valid URL (host or port)") from None
    if parts.scheme not in ("http", "https"):
        raise _invalid("baseUrl", "baseUrl must be an http or https URL")
    if not parts.hostname:
        raise _invalid("baseUrl", "baseUrl needs a host")
    if parts.username is not None or parts.password is not None or "@" in parts.netloc:
        raise _invalid("baseUrl", "baseUrl must not contain credentials; use the auth settings")
    if "?" in url or "#" in url:
        raise _invalid("baseUrl", "baseUrl must not have a query or a fragment")
    if port == 0:
        raise _invalid("baseUrl", "baseUrl has an invalid port")
    segments = unquote(parts.path).split("/")
    if any(s in (".", "..") for s in segments):
        raise _invalid("baseUrl", "baseUrl must not contain '.' or '..' path segments")
    return url.rstrip("/") if parts.path else url


def _check_secret(draft: ConnectorDraft, has_stored_secret: bool) -> None:
    secret = draft.secret
    if draft.auth_kind == "none":
        if secret is not None:
            raise _invalid("secret", "authKind none takes no secret")
        return
    if secret is None:
        if not has_stored_secret:
            raise _invalid("secret", f"authKind {draft.auth_kind} needs a secret")
        return
    if not secret or len(secret) > SECRET_MAX:
        raise _invalid("secret", f"secret must be 1 to {SECRET_MAX} characters")
    if "\x00" in secret:
        raise _invalid("secret", "secret must not contain NUL characters")
    if draft.auth_kind in ("bearer", "api_key") and not _PRINTABLE_ASCII.fullmatch(secret):
        raise _invalid(
            "secret",
            "a bearer token or API key is sent as a header value: printable ASCII, "
            "no surrounding spaces",
        )


def _check_auth_fields(draft: ConnectorDraft) -> None:
    if draft.auth_kind not in AUTH_KINDS:
        raise _invalid("authKind", f"authKind must be one of {', '.join(AUTH_KINDS)}")
    if draft.auth_kind == "basic":
        username = draft.username
        if not username or len(username) > USERNAME_MAX:
            raise _invalid("username", f"basic auth needs a username (1 to {USERNAME_MAX})")
        if ":" in username or _CONTROL.search(username):
            raise _invalid("username", "username must not contain ':' or control characters")
    elif draft.username is not None:
        raise _invalid("username", "username is only for authKind basic")
    if draft.auth_kind == "api_key":
        name = draft.header_name
        if not name or not _HEADER_NAME.fullmatch(name):
            raise _invalid("headerName", "authKind api_key needs headerName, an HTTP header name")
        if name.lower() in RESERVED_HEADERS:
            raise _invalid("headerName", f"headerName {name!r} is set by flowledger itself")
    elif draft.header_name is not None:
        raise _invalid("headerName", "headerName is only for authKind api_key")


def _check_rate_limit(limit: RateLimit | None) -> RateLimit | None:
    if limit is None:
        return None
    rps = limit.requests_per_second
    if not (isinstance(rps, int | float) and math.isfinite(rps) and 0 < rps <= MAX_RPS):
        raise _invalid(
            "rateLimit.requestsPerSecond", f"requestsPerSecond must be in (0, {MAX_RPS:g}]"
        )
    burst = limit.burst if limit.burst else max(1, math.ceil(rps))
    if not 1 <= burst <= MAX_BURST:
        raise _invalid("rateLimit.burst", f"burst must be 1 to {MAX_BURST}")
    return RateLimit(float(rps), int(burst))


def _check_breaker(breaker: BreakerSettings) -> BreakerSettings:
    if not 1 <= breaker.failure_threshold <= MAX_THRESHOLD:
        raise _invalid(
            "circuitBreaker.failureThreshold", f"failureThreshold must be 1 to {MAX_THRESHOLD}"
        )
    reset = breaker.reset_timeout_s
    if not (math.isfinite(reset) and MIN_RESET_S <= reset <= MAX_RESET_S):
        raise _invalid(
            "circuitBreaker.resetTimeoutS",
            f"resetTimeoutS must be {MIN_RESET_S:g} to {MAX_RESET_S:g} seconds",
        )
    return BreakerSettings(int(breaker.failure_threshold), float(reset))


def check_default_headers(headers: Mapping[str, str]) -> dict[str, str]:
    """``headers`` validated as a connector's default headers."""
    if len(headers) > DEFAULT_HEADERS_MAX:
        raise _invalid("defaultHeaders", f"at most {DEFAULT_HEADERS_MAX} default headers")
    seen: set[str] = set()
    for name, value in headers.items():
        where = f"defaultHeaders.{name}"
        if not _HEADER_NAME.fullmatch(name):
            raise _invalid(where, f"{name!r} is not an HTTP header name")
        lowered = name.lower()
        if lowered in seen:
            raise _invalid(where, f"header {name!r} is given twice")
        seen.add(lowered)
        if lowered in RESERVED_HEADERS:
            raise _invalid(where, f"header {name!r} is set by flowledger itself")
        if is_secret(lowered):
            raise _invalid(
                where,
                f"header {name!r} looks like a credential: default headers are stored in "
                "clear; use the connector's auth settings",
            )
        if not isinstance(value, str) or len(value) > HEADER_VALUE_MAX:
            raise _invalid(where, f"a header value is text of at most {HEADER_VALUE_MAX}")
        if not _HEADER_VALUE.fullmatch(value):
            raise _invalid(where, "a header value must be printable ASCII")
    return dict(headers)


def check_draft(draft: ConnectorDraft, *, has_stored_secret: bool = False) -> ConnectorDraft:
    """``draft`` validated and normalised; ``has_stored_secret`` says whether
    the connector being updated already holds a secret that ``secret=None``
    keeps."""
    if not _KEY.fullmatch(draft.key or ""):
        raise _invalid("key", f"key must match {KEY_PATTERN}")
    name = draft.name.strip() if isinstance(draft.name, str) else ""
    if not name or len(name) > NAME_MAX or _CONTROL.search(name):
        raise _invalid("name", f"name must be 1 to {NAME_MAX} printable characters")
    _check_auth_fields(draft)
    _check_secret(draft, has_stored_secret)
    return dataclasses.replace(
        draft,
        name=name,
        auth_kind=draft.auth_kind,
        base_url=check_base_url(draft.base_url),
        rate_limit=_check_rate_limit(draft.rate_limit),
        circuit_breaker=_check_breaker(draft.circuit_breaker),
        default_headers=check_default_headers(draft.default_headers),
    )
