"""A batch's rate (issue 29 item 4; SPEC O-6, O-18): at most ``rate`` items
per second, 1 to 200 for every batch (job batch retry, replay and targeted
recovery stagger their jobs' ``runAt`` at it; batch recovery of instances
and suspend / resume by definition pace their runner at it).

A batch at a rate takes ``count / rate`` seconds to start its ``count``
items: :func:`completion_window` is that span from ``now`` (the job
batches' ``estimatedCompletion``), the same for a dry run and a run.

The batches that act on each item at once run inside their caller's
request, so the request would be held for the whole span:
:func:`check_paced` refuses, before anything is written, a run longer than
:data:`MAX_PACED_SECONDS` (60 s) with :class:`RateTooSlow` (HTTP 422
``rate_too_slow`` naming ``rate``, with the count, the rate, the bound and
the smallest rate that passes). A terminal can wait: the CLI passes no
bound."""

from __future__ import annotations

import math
from datetime import datetime, timedelta
from typing import Any

from flowledger.errors import FlowledgerError

MIN_RATE = 1
MAX_RATE = 200
MAX_PACED_SECONDS = 60


class RateTooSlow(FlowledgerError):
    """A paced run would hold its caller's request longer than the bound."""

    code = "rate_too_slow"


def paced_seconds(count: int, rate: float) -> float:
    """How long ``count`` items take to start at ``rate`` per second."""
    return count / rate if count > 0 else 0.0


def completion_window(now: datetime, count: int, rate: float) -> tuple[datetime, datetime]:
    """From ``now`` until the last of ``count`` items' ``1 / rate`` slots ends."""
    return now, now + timedelta(microseconds=round(paced_seconds(count, rate) * 1_000_000))


def estimate(now: datetime, count: int, rate: float | None) -> dict[str, Any]:
    """``{rate, estimatedCompletion: {from, to} | None}`` for a batch's document."""
    if rate is None:
        return {"rate": None, "estimatedCompletion": None}
    start, end = completion_window(now, count, rate)
    return {"rate": rate, "estimatedCompletion": {"from": start, "to": end}}


def check_paced(count: int, rate: float | None, *, max_seconds: float | None) -> None:
    """Refuse a run of ``count`` items at ``rate`` that takes longer than
    ``max_seconds`` (None: no bound, no rate: at once)."""
    if rate is None or max_seconds is None:
        return
    seconds = paced_seconds(count, rate)
    if seconds <= max_seconds:
        return
    min_rate = math.ceil(count / max_seconds)
    raise RateTooSlow(
        f"{count} items at {rate:g} per second take {seconds:g} s; a run may take at most "
        f"{max_seconds:g} s: give a rate of at least {min_rate}, or select fewer items",
        field="rate",
        count=count,
        rate=rate,
        maxSeconds=max_seconds,
        minRate=min_rate,
    )
