"""The runtime of in-process tests: the default runtime
(:func:`flowledger.runtime.build_runtime`, compensation on) over a test's
database and clock, with the handlers the test modules define.

``TEST_HANDLERS`` is the tests' own registry (product code has none): a test
module adds its handler with ``TEST_HANDLERS.register(...)`` at import, and
every runtime built here runs it next to flowledger's own handlers."""

from __future__ import annotations

from typing import Any

from flowledger.clock import Clock
from flowledger.compensation.policies import compensation_hooks
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.runtime import Runtime, build_runtime
from flowledger.worker.registry import Handler, HandlerRegistry

TEST_HANDLERS = HandlerRegistry()


def runtime_for(db: Database, clock: Clock | None = None, **options: Any) -> Runtime:
    """The default runtime over ``db`` and ``clock`` with the test handlers."""
    return build_runtime(db=db, clock=clock, extra_handlers=TEST_HANDLERS, **options)


def handler_for(db: Database, clock: Clock, job_type: str) -> Handler | None:
    """The handler a worker of the default runtime runs for ``job_type``."""
    return runtime_for(db, clock).handlers.get(job_type)


def default_engine(db: Database, clock: Clock) -> Engine:
    """An engine with the failure policies, as the default runtime builds it."""
    return Engine(db, clock, hooks=compensation_hooks())
