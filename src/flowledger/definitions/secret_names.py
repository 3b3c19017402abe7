"""Which header (or query parameter) names carry secrets (SPEC X-4): the one
rule both the definition checks (a literal secret header value is refused,
:mod:`flowledger.definitions.rules`) and the outbound records (secrets are
redacted, :mod:`flowledger.outbound.records`) apply. It lives here, below
both, so definitions never import outbound.

Secret: ``Authorization``, ``Proxy-Authorization``, ``Cookie``,
``Set-Cookie``, ``X-Api-Key``, ``Api-Key`` and any name containing
``secret``, ``token``, ``password``, ``passwd``, ``apikey``, ``api-key``,
``api_key``, ``session``, ``credential`` or ``signature``."""

from __future__ import annotations

SECRET_HEADERS = frozenset(
    {"authorization", "proxy-authorization", "cookie", "set-cookie", "x-api-key", "api-key"}
)
SECRET_PARTS = (
    "secret",
    "token",
    "password",
    "passwd",
    "apikey",
    "api-key",
    "api_key",
    "session",
    "credential",
    "signature",
)


def is_secret(name: str) -> bool:
    """Whether a header (or query parameter) named ``name`` carries a secret."""
    lowered = name.strip().lower()
    return lowered in SECRET_HEADERS or any(part in lowered for part in SECRET_PARTS)
