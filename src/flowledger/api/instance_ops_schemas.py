"""Request and response models of the instance operations (SPEC O-4, O-6):
force jump and batch recovery. A reason is required and must not be blank
(checked here — 422 ``validation_error`` naming ``reason`` — and again by
the engine)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field

from flowledger.api.batch_schemas import (
    PACED_RATE_DESCRIPTION,
    BatchCounts,
    CompletionWindow,
    ItemResult,
    Rate,
)
from flowledger.api.schemas import MAX_ID, ApiModel, DefinitionKey, RequestModel, no_nul

MAX_RECOVER_IDS = 500


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be blank")
    return value


NodeKey = Annotated[str, Field(min_length=1, max_length=128), AfterValidator(no_nul)]
ActionReason = Annotated[
    str,
    Field(min_length=1, max_length=2000),
    AfterValidator(no_nul),
    AfterValidator(_not_blank),
]
InstanceIdItem = Annotated[int, Field(ge=1, le=MAX_ID)]


class ForceJump(RequestModel):
    """Move the instance's execution to ``target``; with ``fromNode`` only
    the tokens at that node move."""

    target: NodeKey
    reason: ActionReason
    from_node: NodeKey | None = None


class BatchRecover(RequestModel):
    """Select stuck instances and skip their task at ``nodeKey``."""

    definition_key: DefinitionKey
    node_key: NodeKey
    stuck_minutes: int = Field(ge=0, le=10 * 365 * 24 * 60)
    instance_ids: list[InstanceIdItem] | None = Field(
        default=None, min_length=1, max_length=MAX_RECOVER_IDS
    )
    reason: ActionReason
    dry_run: bool = False
    rate: Rate | None = Field(default=None, description=PACED_RATE_DESCRIPTION)


class TaskChange(ApiModel):
    task_id: int | None = None
    node_key: str
    kind: str
    assignee: str
    status: str
    due_at: datetime | None = None


class TokenChange(ApiModel):
    token_id: int | None = None
    node_key: str
    state: str | None = None
    fork_stack: list[int]


class JobChange(ApiModel):
    job_id: int | None = None
    type: str
    node_key: str | None
    task_id: int | None = None
    status: str | None = None
    run_at: datetime | None = None


class ForceJumpPublic(ApiModel):
    """The exact change of a force jump. A preview leaves the ids of what
    entering the target creates empty: they are assigned when it is done."""

    instance_id: int
    preview: bool
    target: str
    from_node: str | None
    reason: str | None
    terminated_tasks: list[TaskChange]
    consumed_tokens: list[TokenChange]
    canceled_jobs: list[JobChange]
    created_tokens: list[TokenChange]
    created_tasks: list[TaskChange]
    created_jobs: list[JobChange]
    instance_status: str


class RecoveryResult(ApiModel):
    instance_id: int
    outcome: Literal["advanced", "skipped", "failed"]
    result: ItemResult  # the shared word of every batch (issue 29 item 4)
    reason: str | None = None
    error: dict[str, Any] | None = None
    skipped_tasks: list[TaskChange] = []
    canceled_jobs: list[JobChange] = []
    token_ids: list[int] = []
    to_nodes: list[str] = []


class RecoveryTotals(ApiModel):
    selected: int
    advanced: int
    skipped: int
    failed: int


class BatchRecoverPublic(ApiModel):
    dry_run: bool
    definition_key: str
    node_key: str
    stuck_minutes: int
    totals: RecoveryTotals
    truncated: bool
    results: list[RecoveryResult]
    batch_id: str  # GET /engine/batches/{batchId}
    counts: BatchCounts
    rate: int | None
    # a run at ``rate`` (a dry run's estimate); none without a rate
    estimated_completion: CompletionWindow | None
