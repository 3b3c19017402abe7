"""The runtime of in-process tests: the default runtime
(:func:`flowledger.runtime.build_runtime`, compensation on) over a test's
database and clock, with the handlers the test modules define.

``TEST_HANDLERS`` is the tests' own registry (product code has none): a test
module adds its handler with ``TEST_HANDLERS.register(...)`` at import, and
every runtime built here runs it next to flowledger's own handlers."""

from __future__ import annotations

import asyncio
from typing import Any
from weakref import WeakKeyDictionary

from flowledger.clock import Clock
from flowledger.compensation.policies import compensation_hooks
from flowledger.db.database import Database
from flowledger.engine import Engine
from flowledger.handlers import BUILTIN_JOB_TYPES
from flowledger.ledger.types import JobTypeRegistry
from flowledger.outbound.resources import Outbound
from flowledger.outbound.secrets import SecretBox, box_from_settings
from flowledger.runtime import Runtime, build_runtime
from flowledger.settings import get_settings
from flowledger.worker.registry import Handler, HandlerRegistry

TEST_HANDLERS = HandlerRegistry()


def job_types_for_tests() -> JobTypeRegistry:
    """flowledger's own job types and those of the test modules' handlers —
    what a test that enqueues a type by name resolves the name with."""
    registry = JobTypeRegistry(BUILTIN_JOB_TYPES, pools=TEST_HANDLERS.job_types.pools)
    for job_type in TEST_HANDLERS.job_types:
        registry.register(job_type)
    return registry


def runtime_for(db: Database, clock: Clock | None = None, **options: Any) -> Runtime:
    """The default runtime over ``db`` and ``clock`` with the test handlers."""
    return build_runtime(db=db, clock=clock, extra_handlers=TEST_HANDLERS, **options)


def handler_for(db: Database, clock: Clock, job_type: str) -> Handler | None:
    """The handler a worker of the default runtime runs for ``job_type``."""
    return runtime_for(db, clock).handlers.get(job_type)


def process_secrets() -> SecretBox:
    """The secret box of the process settings as they are now: the one a
    runtime (or an API context) built now encrypts with."""
    return box_from_settings(get_settings())


_OUTBOUND: WeakKeyDictionary[asyncio.AbstractEventLoop, Outbound] = WeakKeyDictionary()


def process_outbound() -> Outbound:
    """What the test modules' own handlers call out through: the outbound
    resources of the process settings as they are at the call (a test changes
    them with the environment), one per event loop — each test runs on its
    own loop, so the connector guards last one test (or until the settings
    change)."""
    loop = asyncio.get_running_loop()
    settings = get_settings()
    found = _OUTBOUND.get(loop)
    if found is None or found.settings != settings:
        found = _OUTBOUND[loop] = Outbound(settings)
    return found


def default_engine(db: Database, clock: Clock) -> Engine:
    """An engine with the failure policies and the process settings, as the
    default runtime builds it."""
    settings = get_settings()
    return Engine(db, clock, hooks=compensation_hooks(settings.admin_users), settings=settings)
