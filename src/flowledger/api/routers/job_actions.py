"""Job ledger operations under ``/api/workflows/engine/jobs`` (SPEC A-1,
L-24): retry, skip, batch retry, batch skip, replay preview and replay.
Mutations need ``workflow:engine:operate`` and are audited (``job.retry``,
``job.skip``, ``job.batch_retry``, ``job.batch_skip``, ``job.replay``, with
the counts in the row's detail); the preview is a read
(``workflow:instance:monitor``). A job outside the caller's tenants is 404
on the single-job routes and simply not matched by batches and replays.

Each mutation is one call of :mod:`flowledger.ops.jobs.operator_actions`
(its audit row). The rules themselves (eligibility, staggering, chunks,
replay batch ids) live in :mod:`flowledger.ops.jobs.actions`, :mod:`flowledger.ops.jobs.replay`
and :mod:`flowledger.ops.jobs.batching`; this module maps bodies to calls
and results to the models below, which the CLI's ``--json`` output reuses so
both speak the same JSON.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Annotated, Any, Literal, Self

from fastapi import APIRouter, Body, Path
from pydantic import Field, model_validator

from flowledger.api.auth import CurrentCaller
from flowledger.api.batch_schemas import BatchCounts, CompletionWindow, ItemResult, Rate
from flowledger.api.deps import Ctx
from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import (
    MAX_ID,
    NO_NUL,
    ApiModel,
    JsonObject,
    Reason,
    ReasonBody,
    RequestModel,
    UtcTime,
)
from flowledger.ops.jobs import batching
from flowledger.ops.jobs import operator_actions as operator
from flowledger.ops.jobs import replay as replays
from flowledger.ops.jobs.batching import BatchResult
from flowledger.ops.jobs.filters import JobFilter

router = APIRouter(prefix="/engine/jobs", tags=["jobs"], route_class=GuardedRoute)


def _operate(action: str, target_type: str, target_param: str | None = None) -> Any:
    """An operator's job action (``workflow:engine:operate``, audited when refused)."""
    return allow(ENGINE_OPERATE, audit=Audit(action, target_type, target_param))


JobId = Annotated[int, Path(alias="jobId", ge=1, le=MAX_ID)]
Id = Annotated[int, Field(ge=1, le=MAX_ID)]
Ids = Annotated[list[Id], Field(min_length=1, max_length=batching.MAX_BATCH_IDS)]
TypeName = Annotated[str, Field(min_length=1, max_length=64), NO_NUL]
OptionalReason = Annotated[ReasonBody, Body(default_factory=ReasonBody)]

# ------------------------------------------------------------------- bodies


class JobRetry(RequestModel):
    """A manual retry; a ``payload`` different from the job's gets a new operationKey."""

    payload: JsonObject | None = None
    reason: Reason | None = None


class BatchRetry(RequestModel):
    ids: Ids
    rate: Rate = batching.DEFAULT_RATE
    reason: Reason | None = None


class BatchSkip(RequestModel):
    ids: Ids
    reason: Reason | None = None


class ReplayFilter(RequestModel):
    """Which dead / failed jobs a replay takes. ``ageSeconds`` (入库时长) keeps
    jobs enqueued at least that long ago; ``enqueuedBefore`` names the time
    directly — give one or neither. ``enqueuedAfter`` and ``replayBatchId``
    are accepted too, so a failure cluster's ``filter`` can be posted as is."""

    types: list[TypeName] | None = Field(default=None, max_length=100)
    instance_id: Id | None = None
    trace_id: Annotated[str, Field(min_length=1, max_length=64), NO_NUL] | None = None
    keyword: Annotated[str, Field(min_length=1, max_length=200), NO_NUL] | None = None
    fingerprint: Annotated[str, Field(min_length=1, max_length=16), NO_NUL] | None = None
    enqueued_before: UtcTime | None = None
    age_seconds: int | None = Field(default=None, ge=0, le=10 * 365 * 86400)
    enqueued_after: UtcTime | None = None
    replay_batch_id: str | None = Field(default=None, pattern=r"^[0-9a-f]{1,32}$")
    statuses: list[Literal["dead", "failed"]] | None = Field(default=None, min_length=1)
    limit: int = Field(default=batching.MAX_REPLAY, ge=1, le=batching.MAX_REPLAY)

    @model_validator(mode="after")
    def _one_age(self) -> Self:
        if self.enqueued_before is not None and self.age_seconds is not None:
            raise ValueError("give enqueuedBefore or ageSeconds, not both")
        return self

    def job_filter(self, now: datetime, tenants: list[str] | None) -> JobFilter:
        before = self.enqueued_before
        if self.age_seconds is not None:
            before = now - timedelta(seconds=self.age_seconds)
        return JobFilter(
            types=tuple(self.types) if self.types else None,
            statuses=tuple(self.statuses) if self.statuses else None,
            instance_id=self.instance_id,
            trace_id=self.trace_id,
            keyword=self.keyword,
            fingerprint=self.fingerprint,
            enqueued_before=before,
            enqueued_after=self.enqueued_after,
            replay_batch_id=self.replay_batch_id,
            tenants=None if tenants is None else tuple(tenants),
        )


class Replay(ReplayFilter):
    rate: Rate = batching.DEFAULT_RATE
    reason: Reason | None = None


# ---------------------------------------------------------------- responses


class JobActionPublic(ApiModel):
    """A job's state right after an operator's action."""

    id: int
    type: str
    status: str
    tenant_id: str | None
    instance_id: int | None
    generation: int
    attempts: int
    max_attempts: int
    run_at: datetime
    operation_key: str
    replay_batch_id: str | None
    cancel_reason: str | None
    last_error: str | None
    updated_at: datetime

    @classmethod
    def from_row(cls, row: dict[str, Any]) -> JobActionPublic:
        return cls.model_validate(row)


class ItemOutcomePublic(ApiModel):
    id: int
    outcome: Literal["submitted", "skipped"]
    result: ItemResult  # the shared word of every batch (issue 29 item 4)
    reason: str | None = None
    code: str | None = None
    status: str | None = None


class BatchSkipPublic(ApiModel):
    submitted: int
    skipped: int
    items: list[ItemOutcomePublic]
    batch_id: str  # GET /engine/batches/{batchId}
    counts: BatchCounts


class BatchCounted(ApiModel):
    """What every recorded batch adds: its id and its counts."""

    batch_id: str
    counts: BatchCounts


class ReplayPublic(BatchCounted):
    matched: int
    submitted: int
    skipped: int
    rate: int
    estimated_completion: CompletionWindow
    replay_batch_id: str


class BatchRetryPublic(ReplayPublic):
    items: list[ItemOutcomePublic]


class ReplaySample(ApiModel):
    id: int
    type: str
    status: str
    last_error: str | None
    created_at: datetime


class ReplayPreviewPublic(ApiModel):
    """``matched`` is exact up to the replay's limit; past it, at volume, it
    may be the planner's estimate (``matchedEstimated``); ``wouldSubmit`` is
    always exact."""

    matched: int
    would_submit: int
    samples: list[ReplaySample]
    matched_estimated: bool = False


def _items(result: BatchResult) -> list[ItemOutcomePublic]:
    return [ItemOutcomePublic.model_validate(item, from_attributes=True) for item in result.items]


def _recorded(result: BatchResult) -> dict[str, Any]:
    return {"batchId": result.batch_id, "counts": result.counts.public()}


def replay_public(result: BatchResult) -> ReplayPublic:
    return ReplayPublic.model_validate(_staggered(result))


def batch_retry_public(result: BatchResult) -> BatchRetryPublic:
    return BatchRetryPublic.model_validate({**_staggered(result), "items": _items(result)})


def batch_skip_public(result: BatchResult) -> BatchSkipPublic:
    return BatchSkipPublic.model_validate(
        {
            "submitted": result.submitted,
            "skipped": result.skipped,
            "items": _items(result),
            **_recorded(result),
        }
    )


def preview_public(preview: replays.ReplayPreview) -> ReplayPreviewPublic:
    return ReplayPreviewPublic(
        matched=preview.matched,
        would_submit=preview.would_submit,
        samples=[ReplaySample.model_validate(s) for s in preview.samples],
        matched_estimated=preview.matched_estimated,
    )


def _staggered(result: BatchResult) -> dict[str, Any]:
    return {
        "matched": result.matched,
        "submitted": result.submitted,
        "skipped": result.skipped,
        "rate": result.rate,
        "estimatedCompletion": {"from": result.window_from, "to": result.window_to},
        "replayBatchId": result.replay_batch_id,
        **_recorded(result),
    }


# ------------------------------------------------------------------- routes


@router.post(
    "/{jobId}/retry",
    response_model=JobActionPublic,
    dependencies=[_operate("job.retry", "job", "jobId")],
)
async def retry_job(
    job_id: JobId,
    ctx: Ctx,
    caller: CurrentCaller,
    body: Annotated[JobRetry, Body(default_factory=JobRetry)],
) -> JobActionPublic:
    """Retry a failed, dead or canceled job now: a new generation, attempts
    reset. 409 ``invalid_state`` for a pending job (an automatic retry is
    already scheduled), a paused one (resume its instance) and the rest."""
    row = await operator.retry_as(ctx, caller, job_id, payload=body.payload, reason=body.reason)
    return JobActionPublic.from_row(row)


@router.post(
    "/{jobId}/skip",
    response_model=JobActionPublic,
    dependencies=[_operate("job.skip", "job", "jobId")],
)
async def skip_job(
    job_id: JobId, body: OptionalReason, ctx: Ctx, caller: CurrentCaller
) -> JobActionPublic:
    """Skip (cancel) a pending, running, paused, failed or dead job; a running
    executor loses ownership. 409 for succeeded and canceled jobs."""
    row = await operator.skip_job_as(ctx, caller, job_id, reason=body.reason)
    return JobActionPublic.from_row(row)


@router.post(
    "/batch-retry",
    response_model=BatchRetryPublic,
    dependencies=[_operate("job.batch_retry", "job_batch")],
)
async def batch_retry(body: BatchRetry, ctx: Ctx, caller: CurrentCaller) -> BatchRetryPublic:
    """Retry up to 500 jobs by id, each checked like a single retry, eligible
    ones staggered at ``rate`` per second under one replay batch id."""
    result = await operator.batch_retry_as(
        ctx, caller, body.ids, rate=body.rate, reason=body.reason
    )
    return batch_retry_public(result)


@router.post(
    "/batch-skip",
    response_model=BatchSkipPublic,
    dependencies=[_operate("job.batch_skip", "job_batch")],
)
async def batch_skip(body: BatchSkip, ctx: Ctx, caller: CurrentCaller) -> BatchSkipPublic:
    """Skip (cancel) up to 500 jobs by id; ineligible ones are counted as skipped."""
    result = await operator.batch_skip_as(ctx, caller, body.ids, reason=body.reason)
    return batch_skip_public(result)


@router.post(
    "/replay-preview",
    response_model=ReplayPreviewPublic,
    dependencies=[allow(INSTANCE_MONITOR)],
)
async def replay_preview(
    ctx: Ctx,
    caller: CurrentCaller,
    body: Annotated[ReplayFilter, Body(default_factory=ReplayFilter)],
) -> ReplayPreviewPublic:
    """What a replay with this filter would take: the matched total, how many
    one call would submit (at most ``limit``) and the first 10, oldest first."""
    flt = body.job_filter(ctx.now(), caller.tenant_scope)
    return preview_public(await replays.replay_preview(ctx.db, flt, limit=body.limit))


@router.post(
    "/replay-dead", response_model=ReplayPublic, dependencies=[_operate("job.replay", "job_batch")]
)
async def replay_dead(
    ctx: Ctx, caller: CurrentCaller, body: Annotated[Replay, Body(default_factory=Replay)]
) -> ReplayPublic:
    """Replay up to ``limit`` (≤ 500) dead / failed jobs of the filter, oldest
    first, staggered at ``rate`` per second, under a new replay batch id."""
    result = await operator.replay_as(
        ctx,
        caller,
        body.job_filter(ctx.now(), caller.tenant_scope),
        shown_filter=body.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude={"reason", "rate"}
        ),
        limit=body.limit,
        rate=body.rate,
        reason=body.reason,
    )
    return replay_public(result)
