"""The handler registry: how users (and flowledger itself) bind a job type
name to a handler function, a pool and a budget. Registering a handler also
registers its job type with the ledger so jobs of that type can be enqueued.

    from flowledger.worker import job_handler, JobContext

    @job_handler("send_invoice", pool="workflow-ledger-outbound", max_attempts=3)
    async def send_invoice(ctx: JobContext) -> dict:
        ...

``flowledger worker --import myapp.jobs`` imports such modules at start-up.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from flowledger.errors import ConfigurationError
from flowledger.ledger.types import (
    DEFAULT_EXECUTION_TIMEOUT_MS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    JobType,
    get_job_type,
    register_job_type,
)
from flowledger.states import Pool

if TYPE_CHECKING:
    from flowledger.worker.context import JobContext

HandlerFn = Callable[["JobContext"], Awaitable[Any]]


@dataclass(frozen=True)
class Handler:
    job_type: JobType
    fn: HandlerFn


_handlers: dict[str, Handler] = {}


def register_handler(
    name: str,
    fn: HandlerFn,
    *,
    pool: str = Pool.LEDGER,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    execution_timeout_ms: int = DEFAULT_EXECUTION_TIMEOUT_MS,
    priority: int = DEFAULT_PRIORITY,
) -> Handler:
    """Bind ``fn`` to job type ``name`` (registering the type). A built-in type
    keeps its own pool and budget; the handler only supplies the code."""
    if pool not in (Pool.LEDGER, Pool.OUTBOUND):
        raise ConfigurationError(
            f"unknown pool {pool!r}: use {Pool.LEDGER!r} or {Pool.OUTBOUND!r}", field="pool"
        )
    try:
        job_type = get_job_type(name)
    except Exception:
        job_type = register_job_type(
            JobType(name, pool, max_attempts, execution_timeout_ms, priority)
        )
    handler = Handler(job_type, fn)
    _handlers[name] = handler
    return handler


def job_handler(name: str, **options: Any) -> Callable[[HandlerFn], HandlerFn]:
    """Decorator form of :func:`register_handler`."""

    def decorate(fn: HandlerFn) -> HandlerFn:
        register_handler(name, fn, **options)
        return fn

    return decorate


def get_handler(name: str) -> Handler | None:
    return _handlers.get(name)


def import_handler_modules(modules: list[str]) -> None:
    """Import the modules named by ``--import`` so their handlers register.
    The current directory is importable, as with ``python -m``."""
    if modules and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    for module in modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            raise ConfigurationError(
                f"cannot import handler module {module!r}: {exc}", field="--import"
            ) from exc
