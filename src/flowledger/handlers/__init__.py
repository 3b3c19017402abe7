"""Job handlers of flowledger's own job types (one module per area), bound to
a runtime's engine and settings by :func:`builtin_handlers`. Importing this
package registers nothing and installs nothing: the runtime
(:func:`flowledger.runtime.build_runtime`) builds the registry a worker runs."""

from __future__ import annotations

from flowledger.engine.facade import Engine
from flowledger.handlers import (
    alert_jobs,
    automation_jobs,
    compensation_jobs,
    engine_jobs,
    event_jobs,
    outbound_jobs,
)
from flowledger.outbound.resources import Outbound
from flowledger.settings import Settings
from flowledger.worker.registry import HandlerRegistry


def builtin_handlers(engine: Engine, settings: Settings, outbound: Outbound) -> HandlerRegistry:
    """A registry of every built-in handler, running with ``engine`` (and so
    with its hooks) and ``settings``, calling out through ``outbound`` (its
    HTTP client and secret box)."""
    return HandlerRegistry(
        [
            *engine_jobs.handlers(engine),
            *outbound_jobs.handlers(engine, settings, outbound),
            *event_jobs.handlers(outbound),
            *compensation_jobs.handlers(engine, settings, outbound),
            *automation_jobs.handlers(engine, settings, outbound),
            *alert_jobs.handlers(settings, outbound),
        ]
    )


__all__ = ["builtin_handlers"]
