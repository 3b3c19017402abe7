"""The supervisor: runs a process's long-lived parts side by side and stops
them all when one of them ends — a part that dies (an error escaping its
loop) or returns early takes the process down cleanly rather than leaving
it half running (a worker whose drain died, an API whose worker died)."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import structlog

log = structlog.get_logger("flowledger.supervisor")


@dataclass(frozen=True)
class Ended:
    """Which part ended first, and the error it died of (None: it returned)."""

    name: str
    error: BaseException | None


async def first_to_end(
    stop: asyncio.Event, parts: Mapping[str, asyncio.Future[Any]]
) -> Ended | None:
    """Wait until ``stop`` is set (None) or one of ``parts`` ends (it is
    logged as ``service_died``); the parts keep running either way."""
    stop_wait: asyncio.Future[Any] = asyncio.ensure_future(stop.wait())
    try:
        done, _ = await asyncio.wait(
            [stop_wait, *parts.values()], return_when=asyncio.FIRST_COMPLETED
        )
    finally:
        stop_wait.cancel()
    for name, task in parts.items():
        if task in done:
            error = None if task.cancelled() else task.exception()
            log.error("service_died", service=name, error=str(error) if error else "returned")
            return Ended(name, error)
    return None


async def supervise(
    stop: asyncio.Event, parts: Mapping[str, Callable[[asyncio.Event], Awaitable[Any]]]
) -> Ended | None:
    """Run each part with the stop event until ``stop`` is set or one part
    ends; then set ``stop`` so the others shut down, and wait for all of
    them. Returns the part that ended first (None when stopped from outside)."""
    tasks: dict[str, asyncio.Future[Any]] = {
        name: asyncio.ensure_future(run(stop)) for name, run in parts.items()
    }
    try:
        ended = await first_to_end(stop, tasks)
    finally:
        stop.set()
        await asyncio.gather(*tasks.values(), return_exceptions=True)
    return ended
