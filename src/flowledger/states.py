"""Job and attempt states (SPEC L-3, L-4), shared by the schema's CHECK
constraints and the ledger. Dependency-free so every layer may import it.

Parent job transitions (enforced in :mod:`flowledger.ledger`)::

    pending  --claim-->            running
    running  --success/skipped-->  succeeded
    running  --failure, budget-->  pending (runAt = now + backoff)
    running  --exhausted/permanent/unconfirmed--> dead
    running  --lease expired (drain)-->  pending | dead
    pending|running --suspend-->   paused (remaining ms kept)
    paused   --resume-->           pending (runAt = now + remaining)
    pending|running|paused|failed|dead --cancel/skip/cleanup--> canceled
    failed|dead|canceled --manual retry--> pending (generation+1, attempts=0)

``failed`` is reserved for settlements that are manually retryable but must
not retry automatically; automatic settlement goes to pending or dead.
"""

from __future__ import annotations

from enum import StrEnum


class JobStatus(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    DEAD = "dead"
    CANCELED = "canceled"


class AttemptStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"
    SKIPPED = "skipped"
    CANCELED = "canceled"


class Pool(StrEnum):
    """The two execution pools of SPEC L-2."""

    LEDGER = "workflow-ledger"
    OUTBOUND = "workflow-ledger-outbound"


TERMINAL_JOB_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.CANCELED})
RETRYABLE_JOB_STATUSES = frozenset({JobStatus.FAILED, JobStatus.DEAD, JobStatus.CANCELED})
CANCELABLE_JOB_STATUSES = frozenset(
    {JobStatus.PENDING, JobStatus.RUNNING, JobStatus.PAUSED, JobStatus.FAILED, JobStatus.DEAD}
)

EXTERNAL_OUTCOME_UNCONFIRMED = "external_outcome_unconfirmed"


class InstanceStatus(StrEnum):
    """SPEC E-6."""

    RUNNING = "running"
    SUSPENDED = "suspended"
    APPROVED = "approved"
    REJECTED = "rejected"
    WITHDRAWN = "withdrawn"
    CANCELED = "canceled"


TERMINAL_INSTANCE_STATUSES = frozenset(
    {
        InstanceStatus.APPROVED,
        InstanceStatus.REJECTED,
        InstanceStatus.WITHDRAWN,
        InstanceStatus.CANCELED,
    }
)


class TokenState(StrEnum):
    """SPEC E-4."""

    ACTIVE = "active"
    PARKED = "parked"
    CONSUMED = "consumed"


class TaskStatus(StrEnum):
    """SPEC E-5: pending (actionable), waiting (system / external), end states."""

    PENDING = "pending"
    WAITING = "waiting"
    COMPLETED = "completed"
    SKIPPED = "skipped"
    CANCELED = "canceled"
    CC = "cc"
