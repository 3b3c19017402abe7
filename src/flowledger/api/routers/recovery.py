"""Targeted recovery (SPEC O-18): ``POST /api/workflows/engine/recovery/
{action}/preview`` and ``…/run``, actions ``event-dispatch``,
``trigger-dispatch``, ``delay-wake``, ``task-timeout``, ``subprocess``,
``webhook-delivery``, ``external-dispatch``.

Body (all optional): ``instanceId``, ``minAgeMinutes`` (since enqueue),
``limit`` (1 to 500, default 100), ``ratePerSecond`` (1 to 200, default 20: the
replay stagger; ``rate``, the replay endpoints' name, is accepted too),
``reason`` (run only). An unknown action is 404
``unknown_recovery_action`` naming ``field: action``; an ``instanceId`` that
does not exist or lies in a tenant the caller cannot see is 404
``not_found``. The preview is a read (``workflow:instance:monitor``); the run
needs ``workflow:engine:operate`` and writes one ``operation_audit`` row
(``recovery.run``, target ``recovery`` / the action, with the filter, the
totals and the batch id in its detail). Both declare their permission on the
route (:mod:`flowledger.api.route_access`), checked before the action or the
body is looked at (a refused run is audited; a malformed body is a 422 that
writes nothing, as everywhere in the API).

Preview: ``{action, count, byAction, samples}`` — ``count`` items, at most
20 of them as samples, each saying what the run will do (``retry``,
``wake``, ``reclaim``, ``recreate``, ``needs_person``). Run: ``{action,
batchId, rate, totals, estimatedCompletion, items}`` with every planned item
and its ``outcome`` (``done`` / ``skipped`` / ``failed``). The plan and the
run live in :mod:`flowledger.ops.recovery.plan` (its types in
:mod:`flowledger.ops.recovery.model`) and
:mod:`flowledger.ops.recovery.actions`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Literal, Self

from fastapi import APIRouter, Body, Path
from pydantic import Field, model_validator

from flowledger.api.auth import CurrentCaller
from flowledger.api.batch_schemas import BatchCounts, CompletionWindow, ItemResult
from flowledger.api.deps import Ctx
from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import MAX_ID, ApiModel, Reason, RequestModel
from flowledger.ops.jobs import batching
from flowledger.ops.recovery import model as plans
from flowledger.ops.recovery.actions import RecoveryRun, run_as
from flowledger.ops.recovery.plan import recovery_preview

router = APIRouter(prefix="/engine/recovery", tags=["recovery"], route_class=GuardedRoute)

Action = Annotated[str, Path(max_length=64, description=", ".join(plans.ACTIONS))]


class RecoveryFilterBody(RequestModel):
    instance_id: int | None = Field(default=None, ge=1, le=MAX_ID)
    min_age_minutes: int = Field(default=0, ge=0, le=10 * 365 * 24 * 60)
    limit: int = Field(default=plans.DEFAULT_LIMIT, ge=1, le=plans.MAX_LIMIT)
    rate_per_second: int | None = Field(default=None, ge=batching.MIN_RATE, le=batching.MAX_RATE)
    # the replay endpoints' name for the same thing (``rate``), accepted too
    rate: int | None = Field(default=None, ge=batching.MIN_RATE, le=batching.MAX_RATE)
    reason: Reason | None = None

    @model_validator(mode="after")
    def _one_rate(self) -> Self:
        if None not in (self.rate, self.rate_per_second) and self.rate != self.rate_per_second:
            raise ValueError("give ratePerSecond or rate, not two different rates")
        return self

    @property
    def stagger(self) -> int:
        """The replay rate in jobs per second (default 20)."""
        return self.rate_per_second or self.rate or batching.DEFAULT_RATE

    def recovery_filter(self, tenants: list[str] | None) -> plans.RecoveryFilter:
        return plans.RecoveryFilter(
            instance_id=self.instance_id,
            min_age_minutes=self.min_age_minutes,
            limit=self.limit,
            tenants=None if tenants is None else tuple(tenants),
        )


Verb = Literal["retry", "wake", "reclaim", "recreate", "needs_person"]


class RecoveryItemPublic(ApiModel):
    action: Verb
    target: Literal["job", "task", "outbox"]
    reason: str
    job_type: str | None = None
    job_id: int | None = None
    task_id: int | None = None
    instance_id: int | None = None
    outbox_id: int | None = None
    node_key: str | None = None
    status: str | None = None
    since: datetime | None = None
    child_instance_id: int | None = None
    canceled_job_id: int | None = None


class RecoveryPreviewPublic(ApiModel):
    action: str
    count: int
    by_action: dict[str, int]
    samples: list[RecoveryItemPublic]


class RecoveryOutcomePublic(RecoveryItemPublic):
    outcome: Literal["done", "skipped", "failed"]
    result: ItemResult  # the shared word of every batch (the same here)
    detail: str
    code: str | None = None


class RecoveryTotals(ApiModel):
    total: int
    done: int
    skipped: int
    failed: int


class RecoveryRunPublic(ApiModel):
    action: str
    batch_id: str
    rate: int
    totals: RecoveryTotals
    submitted: int
    estimated_completion: CompletionWindow
    items: list[RecoveryOutcomePublic]
    counts: BatchCounts  # GET /engine/batches/{batchId} describes the run


def run_public(run: RecoveryRun) -> RecoveryRunPublic:
    start, end = run.window()
    return RecoveryRunPublic.model_validate(
        {
            "action": run.action,
            "batchId": run.batch_id,
            "rate": run.rate,
            "totals": run.totals(),
            "counts": run.totals(),
            "submitted": run.submitted,
            "estimatedCompletion": {"from": start, "to": end},
            "items": [
                {
                    **result.item.public(),
                    "outcome": result.outcome,
                    "result": result.outcome,
                    "detail": result.detail,
                    "code": result.code,
                    "job_id": result.job_id or result.item.job_id,
                }
                for result in run.items
            ],
        }
    )


def preview_public(plan: plans.RecoveryPlan) -> RecoveryPreviewPublic:
    return RecoveryPreviewPublic(
        action=plan.action,
        count=len(plan.items),
        by_action=plan.by_action,
        samples=[
            RecoveryItemPublic.model_validate(item.public())
            for item in plan.items[: plans.PREVIEW_SAMPLES]
        ],
    )


OptionalFilter = Annotated[RecoveryFilterBody, Body(default_factory=RecoveryFilterBody)]


@router.post(
    "/{action}/preview",
    response_model=RecoveryPreviewPublic,
    dependencies=[allow(INSTANCE_MONITOR)],
)
async def preview_recovery(
    action: Action, body: OptionalFilter, ctx: Ctx, caller: CurrentCaller
) -> RecoveryPreviewPublic:
    """What ``run`` would touch now: the count and the first 20 items, each
    with what will be done to it."""
    plan = await recovery_preview(
        ctx.db, action, body.recovery_filter(caller.tenant_scope), now=ctx.now()
    )
    return preview_public(plan)


@router.post(
    "/{action}/run",
    response_model=RecoveryRunPublic,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("recovery.run", "recovery", "action"))],
)
async def run_recovery(
    action: Action, body: OptionalFilter, ctx: Ctx, caller: CurrentCaller
) -> RecoveryRunPublic:
    """Recover what the preview lists, one transaction per item, staggered at
    ``ratePerSecond``; per-item outcomes and totals."""
    run = await run_as(
        ctx,
        caller,
        action,
        body.recovery_filter(caller.tenant_scope),
        shown_filter=body.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude={"reason"}
        ),
        snapshots=ctx.engine.snapshots,
        hooks=ctx.engine.hooks,
        rate=body.stagger,
        reason=body.reason,
    )
    return run_public(run)
