"""Which time zone the analytics day buckets use (SPEC O-14): the ``tz``
query parameter, else the ``FLOWLEDGER_ANALYTICS_TIME_ZONE`` setting, else the
server's zone (``tzlocal``), else UTC. A name must be an IANA zone."""

from __future__ import annotations

from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

import tzlocal

from flowledger.errors import FlowledgerError
from flowledger.settings import get_settings


class InvalidTimeZone(FlowledgerError):
    code = "invalid_time_zone"


def server_time_zone() -> str:
    try:
        name = tzlocal.get_localzone_name()
    except Exception:  # an unreadable /etc/localtime: fall back to UTC
        return "UTC"
    return name or "UTC"


def resolve_time_zone(name: str | None, *, field: str = "tz") -> ZoneInfo:
    """The zone called ``name`` (or the configured / server default); an
    unknown name is a 422 ``invalid_time_zone`` naming ``field``."""
    chosen = name or get_settings().analytics_time_zone or server_time_zone()
    try:
        return ZoneInfo(chosen)
    except (ZoneInfoNotFoundError, ValueError) as exc:
        raise InvalidTimeZone(f"unknown time zone {chosen!r}", field=field) from exc
