"""The two refusals of access control: no valid caller (401) and a missing
permission or an invisible tenant (403). The API maps them to HTTP
(:mod:`flowledger.api.errors`); the CLI prints them."""

from __future__ import annotations

from flowledger.errors import FlowledgerError


class Unauthenticated(FlowledgerError):
    """No bearer token, or one that is unknown or revoked."""

    code = "unauthenticated"


class Forbidden(FlowledgerError):
    """The caller lacks a permission (``details['permission']`` names it)."""

    code = "forbidden"
