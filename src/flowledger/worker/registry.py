"""Handler registries: how users (and flowledger itself) bind a job type name
to a handler function, a pool and a budget. A :class:`HandlerRegistry` is a
plain object — the runtime builds one (flowledger's own handlers plus the
modules named by ``--import``) and gives it to the worker; there is no
process-wide registry. Defining a handler also registers its job type with
the ledger so jobs of that type can be enqueued.

    from flowledger.worker import job_handler, JobContext

    @job_handler("send_invoice", pool="workflow-ledger-outbound", max_attempts=3)
    async def send_invoice(ctx: JobContext) -> dict:
        ...

The pool is a built-in pool or a user pool declared before the type names it
(``FLOWLEDGER_POOLS="emails=2"`` or ``flowledger worker --pool emails=2``);
an undeclared pool is a ConfigurationError naming ``pool``. Job types are
registered with a :class:`~flowledger.ledger.types.JobTypeRegistry` — the
process's, which the runtime owns as ``runtime.job_types``.

``flowledger worker --import myapp.jobs`` imports such modules at start-up
and adds every decorated function (and every module-level :class:`Handler`,
as :func:`define_handler` returns) to the worker's registry.
"""

from __future__ import annotations

import importlib
import os
import sys
from collections.abc import Awaitable, Callable, Iterable, Iterator
from dataclasses import dataclass
from types import ModuleType
from typing import TYPE_CHECKING, Any

from flowledger.errors import ConfigurationError
from flowledger.ledger.types import (
    DEFAULT_EXECUTION_TIMEOUT_MS,
    DEFAULT_MAX_ATTEMPTS,
    DEFAULT_PRIORITY,
    JobType,
    JobTypeRegistry,
    default_job_types,
)
from flowledger.states import Pool

if TYPE_CHECKING:
    from flowledger.worker.context import JobContext

HandlerFn = Callable[["JobContext"], Awaitable[Any]]
MARK = "__flowledger_handler__"


@dataclass(frozen=True)
class Handler:
    job_type: JobType
    fn: HandlerFn


def define_handler(
    name: str,
    fn: HandlerFn,
    *,
    pool: str = Pool.LEDGER,
    max_attempts: int = DEFAULT_MAX_ATTEMPTS,
    execution_timeout_ms: int = DEFAULT_EXECUTION_TIMEOUT_MS,
    priority: int = DEFAULT_PRIORITY,
    job_types: JobTypeRegistry | None = None,
) -> Handler:
    """Bind ``fn`` to job type ``name``, registering the type with
    ``job_types`` (the process registry, :func:`~flowledger.ledger.types.
    default_job_types`, by default). ``pool`` is a built-in pool or a
    declared user pool (``FLOWLEDGER_POOLS``, ``--pool``); an undeclared one
    is a ConfigurationError naming ``pool``. A type already registered keeps
    its own pool and budget; the handler only supplies the code. The result
    belongs in a :class:`HandlerRegistry`."""
    registry = job_types or default_job_types()
    if name in registry:
        job_type = registry.get(name)
    else:
        job_type = registry.register(
            JobType(name, pool, max_attempts, execution_timeout_ms, priority)
        )
    return Handler(job_type, fn)


def job_handler(name: str, **options: Any) -> Callable[[HandlerFn], HandlerFn]:
    """Decorator form of :func:`define_handler`: marks ``fn`` so that
    :meth:`HandlerRegistry.load_module` finds it."""

    def decorate(fn: HandlerFn) -> HandlerFn:
        setattr(fn, MARK, define_handler(name, fn, **options))
        return fn

    return decorate


class HandlerRegistry:
    """The handlers one worker runs, by job type name. :meth:`register`
    registers job types with ``job_types`` (the process registry by default;
    the runtime passes its own)."""

    def __init__(
        self, handlers: Iterable[Handler] = (), *, job_types: JobTypeRegistry | None = None
    ) -> None:
        self.job_types = job_types or default_job_types()
        self._handlers: dict[str, Handler] = {}
        for handler in handlers:
            self.add(handler)

    def add(self, handler: Handler) -> Handler:
        self._handlers[handler.job_type.name] = handler
        return handler

    def register(self, name: str, fn: HandlerFn, **options: Any) -> Handler:
        """:func:`define_handler` (with this registry's job types) and add the result."""
        options.setdefault("job_types", self.job_types)
        return self.add(define_handler(name, fn, **options))

    def include(self, other: HandlerRegistry) -> HandlerRegistry:
        for handler in other:
            self.add(handler)
        return self

    def get(self, name: str) -> Handler | None:
        return self._handlers.get(name)

    def __iter__(self) -> Iterator[Handler]:
        return iter(list(self._handlers.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._handlers

    def load_module(self, module: ModuleType) -> int:
        """Add the handlers ``module`` defines (decorated functions and
        module-level :class:`Handler` values); how many it added."""
        found = 0
        for value in vars(module).values():
            handler = getattr(value, MARK, None) if callable(value) else None
            if isinstance(value, Handler):
                handler = value
            if isinstance(handler, Handler):
                self.add(handler)
                found += 1
        return found

    def import_modules(self, modules: list[str]) -> None:
        """Import the modules named by ``--import`` and add their handlers.
        The current directory is importable, as with ``python -m``."""
        if modules and os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())
        for name in modules:
            try:
                module = importlib.import_module(name)
            except ImportError as exc:
                raise ConfigurationError(
                    f"cannot import handler module {name!r}: {exc}", field="--import"
                ) from exc
            self.load_module(module)
