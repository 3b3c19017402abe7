"""Job and attempt states (SPEC L-3, L-4), shared by the schema's CHECK
constraints and the ledger. Dependency-free so every layer may import it.

Parent job transitions (:data:`JOB_TRANSITIONS`; the ledger driver selects
rows by it and the conformance suite checks every change against it)::

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


class JobTransition(StrEnum):
    """The named state transitions of a parent job: one per ledger operation
    that may change a job's status (the ledger driver's methods)."""

    CLAIM = "claim"
    SETTLE = "settle"
    RESCUE = "rescue"
    PAUSE = "pause"
    RESUME = "resume"
    CANCEL = "cancel"
    CANCEL_FOR_INSTANCE = "cancel_for_instance"
    RETRY = "retry"


_P, _R, _Z = JobStatus.PENDING, JobStatus.RUNNING, JobStatus.PAUSED
_S, _F, _D, _C = JobStatus.SUCCEEDED, JobStatus.FAILED, JobStatus.DEAD, JobStatus.CANCELED

# (from, to) pairs each transition may take; anything else is forbidden. The
# driver selects its rows by these sources and the conformance suite checks
# every observed change against this table.
JOB_TRANSITIONS: dict[JobTransition, frozenset[tuple[JobStatus, JobStatus]]] = {
    JobTransition.CLAIM: frozenset({(_P, _R)}),
    JobTransition.SETTLE: frozenset({(_R, _S), (_R, _P), (_R, _D)}),
    JobTransition.RESCUE: frozenset({(_R, _P), (_R, _D)}),
    JobTransition.PAUSE: frozenset({(_P, _Z), (_R, _Z), (_R, _D)}),
    JobTransition.RESUME: frozenset({(_Z, _P)}),
    JobTransition.CANCEL: frozenset({(s, _C) for s in (_P, _R, _Z, _F, _D)}),
    JobTransition.CANCEL_FOR_INSTANCE: frozenset({(s, _C) for s in (_P, _R, _Z)}),
    JobTransition.RETRY: frozenset({(s, _P) for s in (_F, _D, _C)}),
}


def transition_sources(transition: JobTransition) -> frozenset[JobStatus]:
    """The statuses a job may be in for ``transition`` to apply."""
    return frozenset(before for before, _ in JOB_TRANSITIONS[transition])


def transition_allowed(transition: JobTransition, before: str, after: str) -> bool:
    """True when ``transition`` may move a job from ``before`` to ``after``
    (staying put — a fenced-out or skipped row — is always allowed)."""
    return before == after or (JobStatus(before), JobStatus(after)) in JOB_TRANSITIONS[transition]


TERMINAL_JOB_STATUSES = frozenset({JobStatus.SUCCEEDED, JobStatus.CANCELED})
RETRYABLE_JOB_STATUSES = transition_sources(JobTransition.RETRY)
CANCELABLE_JOB_STATUSES = transition_sources(JobTransition.CANCEL)

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
