"""Job types: a name bound to a pool and a budget (SPEC L-2, L-5, L-11).

The built-in types of SPEC L-2 are registered here with their pools; users add
their own through :func:`register_job_type` (the worker's handler decorator
calls it). The ledger reads the pool and budget of a type at enqueue time and
stores them on the row, so a worker never needs the enqueuer's registry.
"""

from __future__ import annotations

from dataclasses import dataclass

from flowledger.errors import ConfigurationError, UnknownJobTypeError
from flowledger.states import Pool

DEFAULT_MAX_ATTEMPTS = 5
DEFAULT_EXECUTION_TIMEOUT_MS = 10 * 60 * 1000  # SPEC L-11
DEFAULT_PRIORITY = 100


@dataclass(frozen=True)
class JobType:
    name: str
    pool: str
    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    execution_timeout_ms: int = DEFAULT_EXECUTION_TIMEOUT_MS
    priority: int = DEFAULT_PRIORITY

    def __post_init__(self) -> None:
        if not self.name or len(self.name) > 64:
            raise ConfigurationError("job type name must be 1 to 64 characters", field="name")
        if self.max_attempts < 1:
            raise ConfigurationError("maxAttempts must be at least 1", field="maxAttempts")
        if self.execution_timeout_ms < 1:
            raise ConfigurationError(
                "executionTimeoutMs must be positive", field="executionTimeoutMs"
            )


# SPEC L-22: the advancement types that cleanup cancels.
CLEANUP_TYPES = frozenset(
    {"delay_wake", "task_timeout", "external_dispatch", "subprocess_spawn", "subprocess_join"}
)
# SPEC L-18: the types that an instance suspension pauses.
PAUSABLE_TYPES = frozenset(
    {
        "delay_wake",
        "task_timeout",
        "trigger_dispatch",
        "external_dispatch",
        "subprocess_spawn",
        "subprocess_join",
    }
)

_BUILTIN = [
    JobType("delay_wake", Pool.LEDGER),
    JobType("task_timeout", Pool.LEDGER),
    JobType("subprocess_spawn", Pool.LEDGER),
    JobType("subprocess_join", Pool.LEDGER),
    JobType("schedule_launch", Pool.LEDGER),
    JobType("trigger_dispatch", Pool.OUTBOUND),
    JobType("external_dispatch", Pool.OUTBOUND),
    JobType("event_dispatch", Pool.OUTBOUND, max_attempts=10),
    JobType("webhook_delivery", Pool.OUTBOUND, max_attempts=8),
    JobType("compensation_action", Pool.OUTBOUND, max_attempts=4),
    JobType("automation_action", Pool.OUTBOUND),
]

_registry: dict[str, JobType] = {t.name: t for t in _BUILTIN}


def register_job_type(job_type: JobType, *, replace: bool = False) -> JobType:
    """Register ``job_type``; re-registering the same definition is a no-op."""
    existing = _registry.get(job_type.name)
    if existing is not None and existing != job_type and not replace:
        raise ConfigurationError(
            f"job type {job_type.name!r} is already registered with another pool or budget",
            field="name",
        )
    _registry[job_type.name] = job_type
    return job_type


def get_job_type(name: str) -> JobType:
    try:
        return _registry[name]
    except KeyError:
        raise UnknownJobTypeError(f"unknown job type {name!r}", field="type") from None


def registered_job_types() -> list[JobType]:
    return sorted(_registry.values(), key=lambda t: t.name)
