"""Response models and query-parameter types of the job ledger reads (SPEC
A-1, L-23, L-25), kept apart from :mod:`flowledger.api.schemas` so the job
routers grow without touching the engine's models. The read models of
:mod:`flowledger.ops` already use the API's camelCase names, so each model
here is validated straight from them (``Model.model_validate(row)``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field, StringConstraints

from flowledger.api.schemas import ApiModel
from flowledger.states import AttemptStatus, JobStatus

_NO_NUL = r"^[^\x00]*$"
JobTypeName = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=_NO_NUL)]
TraceIdText = Annotated[str, StringConstraints(min_length=1, max_length=64, pattern=_NO_NUL)]
KeywordText = Annotated[str, StringConstraints(min_length=1, max_length=200, pattern=_NO_NUL)]
FingerprintText = Annotated[str, StringConstraints(pattern=r"^[0-9a-f]{1,16}$")]
BatchIdText = Annotated[str, StringConstraints(min_length=1, max_length=32, pattern=_NO_NUL)]


class JobPublic(ApiModel):
    """A parent job (SPEC L-1) as lists show it; the lease token is never shown."""

    id: int
    type: str
    pool: str
    status: JobStatus
    tenant: str | None = None
    instance_id: int | None = None
    task_id: int | None = None
    node_key: str | None = None
    priority: int
    run_at: datetime
    attempts: int
    max_attempts: int
    generation: int
    lease_owner: str | None = None
    lease_until: datetime | None = None
    execution_timeout_ms: int
    execution_deadline: datetime | None = None
    paused_remaining_ms: int | None = None
    side_effect_at: datetime | None = None
    operation_key: str
    trace_id: str
    idempotency_key: str | None = None
    last_error: str | None = None
    last_error_code: str | None = None
    last_error_fingerprint: str | None = None
    cancel_reason: str | None = None
    replay_batch_id: str | None = None
    created_at: datetime
    updated_at: datetime


class JobPage(ApiModel):
    items: list[JobPublic]
    next: str | None = None


class JobExecutionPublic(ApiModel):
    """One attempt (SPEC L-1, L-4): never rewritten once finished."""

    id: int
    job_id: int
    generation: int
    attempt: int
    status: AttemptStatus
    node_id: str | None = None
    scheduled_at: datetime
    started_at: datetime
    finished_at: datetime | None = None
    duration_ms: int | None = None
    queue_delay_ms: float
    request: Any = None
    response: Any = None
    error: str | None = None
    error_code: str | None = None
    error_fingerprint: str | None = None
    side_effect_at: datetime | None = None


class JobDetail(JobPublic):
    """A job with its payload, result and every attempt of every generation."""

    payload: dict[str, Any]
    result: Any = None
    executions: list[JobExecutionPublic]


class JobChain(ApiModel):
    """Every job of one traceId, oldest first (at most 1,000: ``truncated``)."""

    trace_id: str
    jobs: list[JobDetail]
    instance_ids: list[int]
    truncated: bool


class JobTypeCounts(ApiModel):
    """One job type's jobs per status; ``estimatedStatuses`` names the
    figures that are the planner's estimates."""

    type: str
    total: int
    by_status: dict[str, int]
    estimated_statuses: list[str] = []


class JobSummary(ApiModel):
    """Jobs matching the filter per status and per type. Where an exact
    count would read millions of rows the figure is the planner's estimate:
    ``estimatedStatuses`` names those statuses, ``estimated`` says whether
    any figure (and so ``total``) is one (issue 34 item 3)."""

    total: int
    by_status: dict[str, int]
    by_type: list[JobTypeCounts]
    estimated: bool = False
    estimated_statuses: list[str] = []


class LiveWorkers(ApiModel):
    active: int
    total: int


class Slots(ApiModel):
    in_use: int
    capacity: int


class JobPausePublic(ApiModel):
    """A paused pool or job type (issue 31 item 3): who, why, since."""

    scope: Literal["pool", "job_type"]
    value: str
    paused_by: str
    reason: str
    since: datetime


class RuntimeStatus(ApiModel):
    """SPEC L-23; the exact definitions are in :mod:`flowledger.ops.runtime.status`."""

    now: datetime
    live_workers: LiveWorkers
    slots: Slots
    in_flight: int
    stuck: int
    backlog: int
    oldest_queued_seconds: float | None = None
    queue_p95_ms: float | None = None
    queue_p99_ms: float | None = None
    dead: int
    last_claim_at: datetime | None = None
    failure_rate_1h: float | None = Field(default=None, alias="failureRate1h")
    avg_duration_ms_1h: float | None = Field(default=None, alias="avgDurationMs1h")
    attempts_1h: int = Field(alias="attempts1h")
    failed_attempts_1h: int = Field(alias="failedAttempts1h")
    # how far the read replica's replay trails the primary (issue 34 item 6;
    # null: no replica configured, or it cannot say)
    replica_lag_ms: float | None = None
    paused_scopes: list[JobPausePublic] = []


class ClusterType(ApiModel):
    type: str
    count: int


class ClusterSample(ApiModel):
    job_id: int
    type: str
    status: JobStatus
    error: str | None = None
    instance_id: int | None = None
    trace_id: str
    updated_at: datetime


class FailureCluster(ApiModel):
    """A group of dead/failed jobs; ``filter`` selects exactly its members
    (the body for ``replay-preview`` / ``replay-dead``)."""

    id: str
    by: str
    key: str | int | None = None
    pattern: str | None = None
    count: int
    first_seen_at: datetime
    last_seen_at: datetime
    types: list[ClusterType]
    samples: list[ClusterSample]
    filter: dict[str, Any] | None = None


class FailureClusterList(ApiModel):
    by: str
    items: list[FailureCluster]
