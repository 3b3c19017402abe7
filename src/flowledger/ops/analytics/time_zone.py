"""Which time zone the analytics day buckets use (SPEC O-14): the ``tz``
query parameter, else the ``FLOWLEDGER_ANALYTICS_TIME_ZONE`` setting (the
caller passes it as ``default``), else the server's zone (``tzlocal``), else
UTC. A name must be an IANA zone."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tzlocal

from flowledger.errors import FlowledgerError


class InvalidTimeZone(FlowledgerError):
    code = "invalid_time_zone"


def server_time_zone() -> str:
    try:
        name = tzlocal.get_localzone_name()
    except Exception:  # an unreadable /etc/localtime: fall back to UTC
        return "UTC"
    return name or "UTC"


def resolve_time_zone(name: str | None, *, default: str, field: str = "tz") -> ZoneInfo:
    """The zone called ``name`` (or ``default``, the configured
    ``analytics_time_zone``, or the server's); an unknown name is a 422
    ``invalid_time_zone`` naming ``field``."""
    chosen = name or default or server_time_zone()
    try:
        return ZoneInfo(chosen)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidTimeZone(f"unknown time zone {chosen!r}", field=field) from exc
