"""Running async entry points from the CLI: uvloop when available, SIGTERM
and SIGINT turned into a stop event for graceful shutdown."""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

import structlog

T = TypeVar("T")


def configure_logging() -> None:
    structlog.configure(
        processors=[
            structlog.contextvars.merge_contextvars,
            structlog.processors.add_log_level,
            structlog.processors.TimeStamper(fmt="iso", utc=True),
            structlog.processors.JSONRenderer(),
        ],
        wrapper_class=structlog.make_filtering_bound_logger(20),
        logger_factory=structlog.PrintLoggerFactory(file=sys.stderr),  # stdout is for results
    )


def run_async(main: Callable[[], Coroutine[Any, Any, T]]) -> T:
    try:
        import uvloop

        return uvloop.run(main())  # type: ignore[no-any-return,unused-ignore]
    except ImportError:  # pragma: no cover - uvloop is a dependency on POSIX
        return asyncio.run(main())


def stop_on_signals() -> asyncio.Event:
    """An event set by the first SIGTERM or SIGINT."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    return stop
