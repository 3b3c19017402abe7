"""Job handlers of flowledger's own job types (one module per area), bound to
a runtime's engine and settings by :func:`builtin_handlers`; the types
themselves, declared by the packages that enqueue them, are listed in
:data:`BUILTIN_JOB_TYPES` (SPEC L-2). Importing this package registers
nothing and installs nothing: the runtime
(:func:`flowledger.runtime.build_runtime`) builds the registry a worker runs."""

from __future__ import annotations

from flowledger.compensation.actions import COMPENSATION_ACTION_TYPE
from flowledger.engine.facade import Engine
from flowledger.engine.job_types import ENGINE_JOB_TYPES
from flowledger.events.automation import AUTOMATION_ACTION_TYPE
from flowledger.events.outbox import EVENT_DISPATCH_TYPE
from flowledger.events.webhooks import WEBHOOK_DELIVERY_TYPE
from flowledger.handlers import (
    alert_jobs,
    automation_jobs,
    compensation_jobs,
    engine_jobs,
    event_jobs,
    outbound_jobs,
)
from flowledger.ledger.types import JobType, JobTypeRegistry
from flowledger.ops.alerts.evaluator import ALERT_NOTIFICATION_TYPE
from flowledger.outbound.resources import Outbound
from flowledger.settings import Settings
from flowledger.worker.registry import HandlerRegistry

# flowledger's own job types, each declared where it is enqueued (SPEC L-2)
BUILTIN_JOB_TYPES: tuple[JobType, ...] = (
    *ENGINE_JOB_TYPES.values(),
    EVENT_DISPATCH_TYPE,
    WEBHOOK_DELIVERY_TYPE,
    AUTOMATION_ACTION_TYPE,
    COMPENSATION_ACTION_TYPE,
    ALERT_NOTIFICATION_TYPE,
)


def builtin_handlers(
    engine: Engine,
    settings: Settings,
    outbound: Outbound,
    *,
    job_types: JobTypeRegistry | None = None,
) -> HandlerRegistry:
    """A registry of every built-in handler, running with ``engine`` (and so
    with its hooks) and ``settings``, calling out through ``outbound`` (its
    HTTP client and secret box); their job types (SPEC L-2) are registered
    with ``job_types`` (a fresh registry by default)."""
    return HandlerRegistry(
        [
            *engine_jobs.handlers(engine),
            *outbound_jobs.handlers(engine, settings, outbound),
            *event_jobs.handlers(outbound),
            *compensation_jobs.handlers(engine, settings, outbound),
            *automation_jobs.handlers(engine, settings, outbound),
            *alert_jobs.handlers(settings, outbound),
        ],
        job_types=job_types,
    )


__all__ = ["BUILTIN_JOB_TYPES", "builtin_handlers"]
