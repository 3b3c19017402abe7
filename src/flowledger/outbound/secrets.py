"""Secrets at rest (SPEC X-3, X-5): connector credentials and webhook secrets
are stored encrypted with Fernet (AES-128-CBC + HMAC-SHA256, from the
``cryptography`` package) and decrypted only in the process that uses them.

The key comes from ``FLOWLEDGER_SECRET_KEY`` (a Fernet key). When that is
empty, it is read from ``FLOWLEDGER_SECRET_KEY_FILE`` (default
``./flowledger.key``), and a new key is written there with mode 0600 on
first use — what a laptop run needs. In production, set the key explicitly
and share it between API and worker hosts: a value encrypted with one key
cannot be read with another (:class:`SecretUnreadable`).

Several keys may be given comma-separated (newest first) to rotate: new
values use the first, old values still decrypt with any of them.

There is no process-wide box: :func:`box_from_settings` builds one, and the
runtime's :class:`~flowledger.outbound.resources.Outbound` owns the one its
handlers and API use.
"""

from __future__ import annotations

import os
from pathlib import Path

from cryptography.fernet import Fernet, InvalidToken, MultiFernet

from flowledger.errors import ConfigurationError, FlowledgerError
from flowledger.settings import Settings


class SecretUnreadable(FlowledgerError):
    """A stored secret cannot be decrypted with the configured key(s)."""

    code = "secret_unreadable"


class SecretBox:
    """Encrypts and decrypts short secrets with the configured key(s)."""

    def __init__(self, keys: list[str]) -> None:
        if not keys:
            raise ConfigurationError("no secret key configured", field="secretKey")
        try:
            self._fernet = MultiFernet([Fernet(k.strip().encode()) for k in keys])
        except ValueError:
            raise ConfigurationError(
                "FLOWLEDGER_SECRET_KEY must be Fernet keys (urlsafe base64 of 32 bytes)",
                field="secretKey",
            ) from None

    def encrypt(self, plain: str) -> str:
        return self._fernet.encrypt(plain.encode()).decode("ascii")

    def decrypt(self, token: str) -> str:
        try:
            return self._fernet.decrypt(token.encode("ascii")).decode()
        except (InvalidToken, ValueError):
            raise SecretUnreadable(
                "a stored secret cannot be decrypted with the configured key"
            ) from None


def _key_from_file(path: Path) -> str:
    try:
        return path.read_text().strip()
    except FileNotFoundError:
        pass
    key = Fernet.generate_key().decode("ascii")
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process created it first
        return path.read_text().strip()
    with os.fdopen(fd, "w") as out:
        out.write(key + "\n")
    return key


def need_box(box: SecretBox | None) -> SecretBox:
    """``box``, or ConfigurationError when a secret must be stored without one."""
    if box is None:
        raise ConfigurationError(
            "storing a secret needs the runtime's secret box", field="secretKey"
        )
    return box


def box_from_settings(settings: Settings) -> SecretBox:
    text = settings.secret_key or _key_from_file(Path(settings.secret_key_file))
    return SecretBox([k for k in text.split(",") if k.strip()])
