"""Handler registries: how users (and flowledger itself) bind a job type name
to a handler function, a pool and a budget. A :class:`HandlerRegistry` is a
plain object — the runtime builds one (flowledger's own handlers plus the
modules named by ``--import``) and gives it to the worker; there is no
process-wide registry. Adding a handler to a registry registers its job type
with the registry's :class:`~flowledger.ledger.types.JobTypeRegistry`.

    from flowledger.worker import job_handler, JobContext

    @job_handler("send_invoice", pool="workflow-ledger-outbound", max_attempts=3)
    async def send_invoice(ctx: JobContext) -> dict:
        ...

The pool is a built-in pool or a user pool declared before the type names it
(``FLOWLEDGER_POOLS="emails=2"`` or ``flowledger worker --pool emails=2``);
an undeclared pool is a ConfigurationError naming ``pool`` when the handler
is added to a registry whose job types do not declare it (the runtime's,
``runtime.job_types``, declares the settings' and ``--pool``'s pools).

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
    job_type: str | JobType,
    fn: HandlerFn,
    *,
    pool: str | None = None,
    max_attempts: int | None = None,
    execution_timeout_ms: int | None = None,
    priority: int | None = None,
    job_types: JobTypeRegistry | None = None,
) -> Handler:
    """Bind ``fn`` to ``job_type``: a :class:`JobType` (which carries its
    pool and budget), or a name with the pool and budget given here (the
    ledger pool and the default budget where not given). With
    ``job_types``, a name it already knows keeps its registered pool and
    budget (the handler only supplies the code), and the type is registered
    there — an undeclared pool is a ConfigurationError naming ``pool``.
    Without, nothing is registered until the handler is added to a
    :class:`HandlerRegistry`. A pool or budget given beside a JobType is a
    ConfigurationError naming the option: it would be ignored."""
    options = {
        "pool": pool,
        "max_attempts": max_attempts,
        "execution_timeout_ms": execution_timeout_ms,
        "priority": priority,
    }
    if isinstance(job_type, JobType):
        given = [name for name, value in options.items() if value is not None]
        if given:
            raise ConfigurationError(
                f"job type {job_type.name!r} is a JobType: its {given[0]} is set on the "
                "JobType, not on the handler",
                field=given[0],
            )
        resolved = job_type
    elif job_types is not None and job_type in job_types:
        resolved = job_types.get(job_type)
    else:
        resolved = JobType(
            job_type,
            pool if pool is not None else Pool.LEDGER,
            max_attempts if max_attempts is not None else DEFAULT_MAX_ATTEMPTS,
            execution_timeout_ms
            if execution_timeout_ms is not None
            else DEFAULT_EXECUTION_TIMEOUT_MS,
            priority if priority is not None else DEFAULT_PRIORITY,
        )
    if job_types is not None:
        job_types.register(resolved)
    return Handler(resolved, fn)


def job_handler(name: str | JobType, **options: Any) -> Callable[[HandlerFn], HandlerFn]:
    """Decorator form of :func:`define_handler`: marks ``fn`` so that
    :meth:`HandlerRegistry.load_module` finds it."""

    def decorate(fn: HandlerFn) -> HandlerFn:
        setattr(fn, MARK, define_handler(name, fn, **options))
        return fn

    return decorate


class HandlerRegistry:
    """The handlers one worker runs, by job type name, and their job types
    in ``job_types`` (a registry of its own unless one is given: the runtime
    passes ``runtime.job_types``). Adding a handler registers its type."""

    def __init__(
        self, handlers: Iterable[Handler] = (), *, job_types: JobTypeRegistry | None = None
    ) -> None:
        self.job_types = JobTypeRegistry() if job_types is None else job_types
        self._handlers: dict[str, Handler] = {}
        for handler in handlers:
            self.add(handler)

    def add(self, handler: Handler) -> Handler:
        """Run ``handler`` for its type, registering the type with
        :attr:`job_types` (a type of that name with another pool or budget,
        or naming an undeclared pool, is a ConfigurationError)."""
        self.job_types.register(handler.job_type)
        self._handlers[handler.job_type.name] = handler
        return handler

    def register(self, name: str, fn: HandlerFn, **options: Any) -> Handler:
        """:func:`define_handler` (with this registry's job types) and add the result."""
        options.setdefault("job_types", self.job_types)
        return self.add(define_handler(name, fn, **options))

    def include(self, other: HandlerRegistry) -> HandlerRegistry:
        """Add ``other``'s handlers, and declare the pools its job types may name."""
        self.job_types.declare_pools(other.job_types.pools)
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
