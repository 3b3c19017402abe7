"""The engine's job types (SPEC L-2) and the engine's policies over them:
which advancement jobs an instance's end cancels (L-22) and which its
suspension pauses (L-18).

Each type is an immutable :class:`~flowledger.ledger.types.JobType`
constant; the engine enqueues with these values and passes the policy sets
to the ledger's pause, resume and cleanup transitions, so the ledger itself
names no engine job type."""

from __future__ import annotations

from types import MappingProxyType

from flowledger.ledger.types import JobType
from flowledger.states import Pool

DELAY_WAKE = JobType("delay_wake", Pool.LEDGER)
TASK_TIMEOUT = JobType("task_timeout", Pool.LEDGER)
SUBPROCESS_SPAWN = JobType("subprocess_spawn", Pool.LEDGER)
SUBPROCESS_JOIN = JobType("subprocess_join", Pool.LEDGER)
SCHEDULE_LAUNCH = JobType("schedule_launch", Pool.LEDGER)
TRIGGER_DISPATCH = JobType("trigger_dispatch", Pool.OUTBOUND)
EXTERNAL_DISPATCH = JobType("external_dispatch", Pool.OUTBOUND)

ENGINE_JOB_TYPES = MappingProxyType(
    {
        t.name: t
        for t in (
            DELAY_WAKE,
            TASK_TIMEOUT,
            SUBPROCESS_SPAWN,
            SUBPROCESS_JOIN,
            SCHEDULE_LAUNCH,
            TRIGGER_DISPATCH,
            EXTERNAL_DISPATCH,
        )
    }
)

# SPEC L-22: the advancement types that cleanup cancels.
CLEANUP_TYPES = frozenset(
    {"delay_wake", "task_timeout", "external_dispatch", "subprocess_spawn", "subprocess_join"}
)
# SPEC L-18: the types that an instance suspension pauses.
PAUSABLE_TYPES = CLEANUP_TYPES | {"trigger_dispatch"}
# a force jump's and a targeted recovery's advancement cancel (SPEC O-4): both
ADVANCEMENT_TYPES = PAUSABLE_TYPES | CLEANUP_TYPES


def engine_job_type(name: str) -> JobType:
    """The engine's job type ``name`` (a KeyError names a type that is not the engine's)."""
    return ENGINE_JOB_TYPES[name]
