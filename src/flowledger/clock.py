"""The one injectable source of time.

Services take a :class:`Clock`; tests pass a :class:`ManualClock` and move
time instead of sleeping. Production workers use :class:`DatabaseClock`, the
host clock corrected by the measured offset to the database server's clock, so
lease and stuck decisions agree across hosts whose clocks drift (the DESIGN
rule "stuck and lease decisions use the database's time").
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Protocol


class Clock(Protocol):
    def now(self) -> datetime:
        """The current time, timezone-aware UTC."""
        ...


class SystemClock:
    """The host's clock."""

    def now(self) -> datetime:
        return datetime.now(UTC)


class DatabaseClock:
    """The host clock plus an offset to the database clock (see
    :meth:`flowledger.db.database.Database.now`; on SQLite the host clock
    itself, offset ~0), calibrated by the worker at start-up."""

    def __init__(self) -> None:
        self.offset = timedelta(0)

    def calibrate(self, db_now: datetime, local_before: datetime, local_after: datetime) -> None:
        midpoint = local_before + (local_after - local_before) / 2
        self.offset = db_now - midpoint

    def now(self) -> datetime:
        return datetime.now(UTC) + self.offset


class ManualClock:
    """A clock that moves only when told to (tests)."""

    def __init__(self, start: datetime | None = None) -> None:
        self._now = start or datetime(2026, 1, 1, tzinfo=UTC)

    def now(self) -> datetime:
        return self._now

    def advance(self, *, seconds: float = 0, ms: float = 0) -> datetime:
        self._now += timedelta(seconds=seconds, milliseconds=ms)
        return self._now

    def set(self, when: datetime) -> None:
        self._now = when
