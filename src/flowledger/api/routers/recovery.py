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
totals and the batch id in its detail). Permissions are checked before the
action or the body is looked at: the routes read the raw body and parse it
after the permission check (a refused run is audited; a malformed body is a
422 that writes nothing, as everywhere in the API).

Preview: ``{action, count, byAction, samples}`` — ``count`` items, at most
20 of them as samples, each saying what the run will do (``retry``,
``wake``, ``reclaim``, ``recreate``, ``needs_person``). Run: ``{action,
batchId, rate, totals, estimatedCompletion, items}`` with every planned item
and its ``outcome`` (``done`` / ``skipped`` / ``failed``). The plan and the
run live in :mod:`flowledger.ops.recovery_plan` (its types in
:mod:`flowledger.ops.recovery_types`) and
:mod:`flowledger.ops.recovery_actions`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal, Self

from fastapi import APIRouter, Path, Request
from fastapi.exceptions import RequestValidationError
from pydantic import Field, ValidationError, model_validator

from flowledger.api.audit import audited
from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR, require
from flowledger.api.schemas import MAX_ID, ApiModel, Reason, RequestModel
from flowledger.ops import job_batching as batching
from flowledger.ops import recovery_types as plans
from flowledger.ops.recovery_actions import RecoveryRun, recovery_run
from flowledger.ops.recovery_plan import recovery_preview

router = APIRouter(prefix="/engine/recovery", tags=["recovery"])

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
    detail: str
    code: str | None = None


class RecoveryTotals(ApiModel):
    total: int
    done: int
    skipped: int
    failed: int


class CompletionWindow(ApiModel):
    start: datetime = Field(alias="from")
    end: datetime = Field(alias="to")


class RecoveryRunPublic(ApiModel):
    action: str
    batch_id: str
    rate: int
    totals: RecoveryTotals
    submitted: int
    estimated_completion: CompletionWindow
    items: list[RecoveryOutcomePublic]


def run_public(run: RecoveryRun) -> RecoveryRunPublic:
    start, end = run.window()
    return RecoveryRunPublic.model_validate(
        {
            "action": run.action,
            "batchId": run.batch_id,
            "rate": run.rate,
            "totals": run.totals(),
            "submitted": run.submitted,
            "estimatedCompletion": {"from": start, "to": end},
            "items": [
                {
                    **result.item.public(),
                    "outcome": result.outcome,
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


def _body_doc() -> dict[str, Any]:
    """The OpenAPI request body of the routes below, which read their raw
    bytes so that the permission is checked before the body is parsed."""
    schema = RecoveryFilterBody.model_json_schema(
        by_alias=True, ref_template="#/components/schemas/{model}"
    )
    return {"requestBody": {"required": False, "content": {"application/json": {"schema": schema}}}}


async def _parse(request: Request) -> RecoveryFilterBody:
    """The body (empty: every default); 422 ``validation_error`` naming
    ``body.<field>`` like FastAPI's own validation."""
    raw = (await request.body()).strip() or b"{}"
    try:
        return RecoveryFilterBody.model_validate_json(raw)
    except ValidationError as exc:
        errors = [
            {**err, "loc": ("body", *err.get("loc", ()))}
            for err in exc.errors(include_url=False, include_context=False, include_input=False)
        ]
        raise RequestValidationError(errors) from None


@router.post("/{action}/preview", response_model=RecoveryPreviewPublic, openapi_extra=_body_doc())
async def preview_recovery(
    action: Action, request: Request, ctx: Ctx, caller: CurrentCaller
) -> RecoveryPreviewPublic:
    """What ``run`` would touch now: the count and the first 20 items, each
    with what will be done to it."""
    require(caller, INSTANCE_MONITOR)
    body = await _parse(request)
    plan = await recovery_preview(
        ctx.db, action, body.recovery_filter(caller.tenant_scope), now=ctx.now()
    )
    return preview_public(plan)


@router.post("/{action}/run", response_model=RecoveryRunPublic, openapi_extra=_body_doc())
async def run_recovery(
    action: Action, request: Request, ctx: Ctx, caller: CurrentCaller
) -> RecoveryRunPublic:
    """Recover what the preview lists, one transaction per item, staggered at
    ``ratePerSecond``; per-item outcomes and totals."""
    if not caller.has(ENGINE_OPERATE):  # the refusal is audited, before the body is read
        async with audited(ctx, caller, "recovery.run", "recovery", action):
            require(caller, ENGINE_OPERATE)
    body = await _parse(request)  # a malformed body writes no audit row (as everywhere)
    async with audited(ctx, caller, "recovery.run", "recovery", action, reason=body.reason) as e:
        require(caller, ENGINE_OPERATE)
        plans.job_types(action)
        e.detail["filter"] = body.model_dump(
            mode="json", by_alias=True, exclude_none=True, exclude={"reason"}
        )
        run = await recovery_run(
            ctx.db,
            action,
            body.recovery_filter(caller.tenant_scope),
            now=ctx.now(),
            snapshots=ctx.engine.snapshots,
            hooks=ctx.engine.hooks,
            actor=caller.user_id,
            rate=body.stagger,
        )
        e.detail.update(run.totals(), batchId=run.batch_id, submitted=run.submitted)
    return run_public(run)
