"""Plain data passed in and out of the ledger: what to enqueue, what a claim
hands to an executor (including its fence), how an attempt ended, and what
rescue, retention and the worker registry report."""

from __future__ import annotations

import os
import socket
import uuid
from dataclasses import dataclass, field
from datetime import datetime
from enum import StrEnum
from typing import Any

from flowledger.ledger.types import JobType


def new_key() -> str:
    """A fresh operationKey / traceId."""
    return uuid.uuid4().hex


@dataclass(frozen=True)
class JobSpec:
    """A job to enqueue. ``type`` is the job's :class:`~flowledger.ledger.
    types.JobType` (or its name, when the enqueuer passes a registry that
    knows it). Budget fields left as None take the job type's."""

    type: JobType | str
    payload: dict[str, Any] = field(default_factory=dict)
    run_at: datetime | None = None
    delay_ms: int = 0
    priority: int | None = None
    max_attempts: int | None = None
    execution_timeout_ms: int | None = None
    idempotency_key: str | None = None
    operation_key: str | None = None
    trace_id: str | None = None
    tenant_id: str | None = None
    instance_id: int | None = None
    task_id: int | None = None
    node_key: str | None = None


@dataclass(frozen=True)
class EnqueueResult:
    job_id: int
    created: bool  # False when the idempotencyKey already named a job


@dataclass(frozen=True)
class Fence:
    """What an executor must present to write anything for its job (L-9, L-10)."""

    job_id: int
    generation: int
    lease_token: str
    execution_id: int
    # the attempt row's start: on PostgreSQL the partition key of
    # ``workflow_job_executions`` and part of its primary key, so the
    # attempt's update names its one partition (issue 34 item 1)
    execution_started_at: datetime


@dataclass(frozen=True)
class ClaimedJob:
    id: int
    type: str
    pool: str
    payload: dict[str, Any]
    generation: int
    attempt: int
    max_attempts: int
    lease_token: str
    lease_until: datetime
    execution_deadline: datetime
    execution_id: int
    scheduled_at: datetime
    started_at: datetime
    operation_key: str
    trace_id: str
    tenant_id: str | None
    instance_id: int | None
    task_id: int | None
    node_key: str | None

    @property
    def fence(self) -> Fence:
        return Fence(self.id, self.generation, self.lease_token, self.execution_id, self.started_at)


@dataclass(frozen=True)
class ClaimBatch:
    """What one claim answered: the jobs claimed and, when the claim's own
    statement learned it (``next_due_known``), when the earliest pending job
    of the pool beyond them falls due (None: no pending job)."""

    jobs: list[ClaimedJob]
    next_due: datetime | None = None
    next_due_known: bool = False


@dataclass(frozen=True)
class SuccessRow:
    """One fenced success (or skip) of a batch settlement."""

    job_id: int
    generation: int
    lease_token: str
    execution_id: int
    duration_ms: int | None  # None: the caller did not say when the attempt started
    skipped: bool
    result: Any
    execution_started_at: datetime  # the attempt row's partition key (see Fence)


class OutcomeKind(StrEnum):
    SUCCESS = "success"
    SKIPPED = "skipped"
    RETRY = "retry"  # failed; retried with backoff while budget remains, else dead
    DEAD = "dead"  # permanent failure
    UNCONFIRMED = "unconfirmed"  # SPEC L-17 dead letter
    RELEASED = "released"  # given back on shutdown; the attempt does not count


@dataclass(frozen=True)
class Outcome:
    kind: OutcomeKind
    result: Any = None
    error: str | None = None
    error_code: str | None = None
    retry_delay_ms: int | None = None
    request: dict[str, Any] | None = None
    response: dict[str, Any] | None = None

    @staticmethod
    def success(result: Any = None) -> Outcome:
        return Outcome(OutcomeKind.SUCCESS, result=result)

    @staticmethod
    def skipped(reason: str) -> Outcome:
        return Outcome(OutcomeKind.SKIPPED, result={"skipped": reason})

    @staticmethod
    def retry(error: str, *, code: str = "error", delay_ms: int | None = None) -> Outcome:
        return Outcome(OutcomeKind.RETRY, error=error, error_code=code, retry_delay_ms=delay_ms)

    @staticmethod
    def dead(error: str, *, code: str = "permanent") -> Outcome:
        return Outcome(OutcomeKind.DEAD, error=error, error_code=code)

    @staticmethod
    def unconfirmed(error: str) -> Outcome:
        return Outcome(
            OutcomeKind.UNCONFIRMED, error=error, error_code="external_outcome_unconfirmed"
        )

    @staticmethod
    def released(reason: str) -> Outcome:
        return Outcome(OutcomeKind.RELEASED, error=reason, error_code="released")

    @staticmethod
    def deferred(reason: str, *, code: str, delay_ms: int | None) -> Outcome:
        """Handed back unattempted; runs again after ``delay_ms``, the
        attempt not counted."""
        return Outcome(OutcomeKind.RELEASED, error=reason, error_code=code, retry_delay_ms=delay_ms)


@dataclass
class RescueReport:
    """What one rescue run (or targeted reclaim) did."""

    retried: list[int] = field(default_factory=list)
    dead: list[int] = field(default_factory=list)
    hinted_pools: list[str] = field(default_factory=list)


# retention's keyset over settled jobs: the (updated_at, id) of the last one
PurgeCursor = tuple[datetime, int]


@dataclass(frozen=True)
class JobPurge:
    """One retention batch: where the next batch starts (None: nothing was
    left) and the rows removed per table."""

    cursor: PurgeCursor | None
    jobs: int
    attempts: int
    receipts: int


@dataclass(frozen=True)
class NodeInfo:
    """One worker process in the registry (SPEC L-21)."""

    id: str
    hostname: str
    pid: int
    roles: list[str]
    pools: dict[str, int]  # pool name → slot capacity


def new_node(roles: list[str], pools: dict[str, int]) -> NodeInfo:
    """This process as a registry row; the id contains the host name and the pid."""
    host = socket.gethostname()
    pid = os.getpid()
    return NodeInfo(f"{host}:{pid}:{uuid.uuid4().hex[:8]}", host, pid, roles, pools)
