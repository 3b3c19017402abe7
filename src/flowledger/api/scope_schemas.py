"""Request and response models of the scope operations (issue 31 item 3):
pausing a pool or a job type, and suspending / resuming every running
(suspended) instance of a definition. A reason is required to pause and to
suspend, and must not be blank (422 ``validation_error`` naming ``reason``)."""

from __future__ import annotations

from typing import Any, Literal, Self

from pydantic import Field, model_validator

from flowledger.api.batch_schemas import (
    PACED_RATE_DESCRIPTION,
    BatchCounts,
    CompletionWindow,
    ItemResult,
    Rate,
)
from flowledger.api.instance_ops_schemas import (
    MAX_RECOVER_IDS,
    ActionReason,
    InstanceIdItem,
    NodeKey,
)
from flowledger.api.job_schemas import JobPausePublic, JobTypeName
from flowledger.api.schemas import ApiModel, DefinitionKey, Reason, RequestModel


class JobScope(RequestModel):
    """Exactly one of ``pool`` and ``jobType``."""

    pool: JobTypeName | None = None
    job_type: JobTypeName | None = None

    @model_validator(mode="after")
    def _one_scope(self) -> Self:
        if (self.pool is None) == (self.job_type is None):
            raise ValueError("give exactly one of pool and jobType")
        return self

    @property
    def scope(self) -> Literal["pool", "job_type"]:
        return "pool" if self.pool is not None else "job_type"

    @property
    def value(self) -> str:
        return self.pool if self.pool is not None else str(self.job_type)

    @property
    def field(self) -> str:
        return "pool" if self.pool is not None else "jobType"


class PauseJobs(JobScope):
    reason: ActionReason


class ResumeJobs(JobScope):
    reason: Reason | None = None


class JobPauseList(ApiModel):
    """The paused scopes, and the pools and job types this API's runtime
    knows (what may be paused)."""

    items: list[JobPausePublic]
    known_pools: list[str]
    known_job_types: list[str]


class DefinitionScope(RequestModel):
    """The instances of ``definitionKey`` [version] [with an active token at
    ``nodeKey``] [only ``instanceIds``], acted on at ``rate`` per second
    (the preview: the estimate of a run at that rate)."""

    definition_key: DefinitionKey
    version: int | None = Field(default=None, ge=1, le=1_000_000)
    node_key: NodeKey | None = None
    instance_ids: list[InstanceIdItem] | None = Field(
        default=None, min_length=1, max_length=MAX_RECOVER_IDS
    )
    rate: Rate | None = Field(default=None, description=PACED_RATE_DESCRIPTION)


class ScopePreviewRequest(DefinitionScope):
    action: Literal["suspend", "resume"] = "suspend"


class ScopeSuspend(DefinitionScope):
    reason: ActionReason


class ScopeResume(DefinitionScope):
    reason: Reason | None = None


class ScopeItem(ApiModel):
    instance_id: int
    outcome: Literal["suspended", "resumed", "skipped", "failed"]
    result: ItemResult  # the shared word of every batch (issue 29 item 4)
    reason: str | None = None
    error: dict[str, Any] | None = None
    job_ids: list[int] = []


class ScopePreviewPublic(ApiModel):
    action: Literal["suspend", "resume"]
    definition_key: str
    version: int | None
    node_key: str | None
    dry_run: bool
    count: int
    sample: list[int]
    truncated: bool
    skipped_by_status: dict[str, int]
    skipped: list[ScopeItem]
    rate: int | None
    # a run at ``rate``: from now to now + count / rate; none without a rate
    estimated_completion: CompletionWindow | None


class ScopeTotals(ApiModel):
    selected: int
    suspended: int = 0
    resumed: int = 0
    skipped: int
    failed: int


class ScopeRunPublic(ApiModel):
    action: Literal["suspend", "resume"]
    definition_key: str
    version: int | None
    node_key: str | None
    dry_run: bool
    totals: ScopeTotals
    truncated: bool
    skipped_by_status: dict[str, int]
    results: list[ScopeItem]
    batch_id: str  # GET /engine/batches/{batchId}
    counts: BatchCounts
    rate: int | None
    estimated_completion: CompletionWindow | None
