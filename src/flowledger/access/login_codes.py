"""One-time login codes of the web console (see
:mod:`flowledger.api.console_login`): random, short-lived (:data:`CODE_TTL`),
single-use, kept only as their sha256 digests. The runtime owns the codes of
its process (:attr:`flowledger.runtime.Runtime.login_codes`): the CLI mints
in them, the session endpoint of the app built from the same runtime
redeems."""

from __future__ import annotations

import hashlib
import secrets
import threading
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

CODE_TTL = timedelta(minutes=10)


@dataclass(frozen=True)
class _Pending:
    user_id: str
    expires_at: datetime


class LoginCodes:
    """Single-use login codes of this process (thread-safe: the CLI mints
    them before or while uvicorn serves)."""

    def __init__(self, ttl: timedelta = CODE_TTL) -> None:
        self.ttl = ttl
        self._codes: dict[str, _Pending] = {}
        self._lock = threading.Lock()

    def mint(self, user_id: str, *, now: datetime | None = None) -> str:
        code = secrets.token_urlsafe(24)
        moment = now or datetime.now(UTC)
        with self._lock:
            self._codes = {k: v for k, v in self._codes.items() if v.expires_at > moment}
            self._codes[_digest(code)] = _Pending(user_id, moment + self.ttl)
        return code

    def redeem(self, code: str, *, now: datetime | None = None) -> str | None:
        """The user the code was minted for, once; None when it is unknown,
        used or expired."""
        moment = now or datetime.now(UTC)
        with self._lock:
            pending = self._codes.pop(_digest(code), None)
        if pending is None or pending.expires_at <= moment:
            return None
        return pending.user_id


def _digest(code: str) -> str:
    return hashlib.sha256(code.encode("utf-8")).hexdigest()
