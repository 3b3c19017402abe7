"""Data retention under ``/api/workflows/engine/retention`` (SPEC O-20, A-1,
A-2): the policies (GET, PATCH), a preview of what a run would remove (POST
``/preview``, counts per policy and table, no change), a run now (POST
``/run``) and the record of runs (GET ``/runs``).

Reads and the preview need ``workflow:instance:monitor``; PATCH and run need
``workflow:engine:operate`` and are audited (``retention.policies_update``,
``retention.run``). The permission is checked before the body is validated.
Retention is cluster-wide (like the runtime status): policies are global and
a run purges every tenant's expired rows. A run while another one is in
progress is 409 ``retention_running``. The rules live in
:mod:`flowledger.ops.retention.runs` and :mod:`flowledger.ops.retention.policies`;
the audited actions in :mod:`flowledger.ops.retention.changes`.
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Self

from fastapi import APIRouter, Body, Query
from pydantic import Field, model_validator

from flowledger.api.auth import CurrentCaller
from flowledger.api.batch_schemas import BatchCounts
from flowledger.api.deps import Ctx
from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import ApiModel, RequestModel
from flowledger.ops.analytics.time_zone import server_time_zone
from flowledger.ops.retention import changes as actions
from flowledger.ops.retention import policies as rp
from flowledger.ops.retention import runs as ops

router = APIRouter(prefix="/engine/retention", tags=["retention"], route_class=GuardedRoute)

PolicyName = Annotated[str, Field(min_length=1, max_length=64)]
KeepDays = Annotated[int, Field(ge=1, le=rp.MAX_KEEP_DAYS)]


MONITOR = allow(INSTANCE_MONITOR)

# ------------------------------------------------------------------- bodies


class PolicyPatch(RequestModel):
    name: PolicyName
    enabled: bool | None = None
    keep_days: KeepDays | None = None


class PoliciesPatch(RequestModel):
    """Either ``{"policies": [{"name", "enabled"?, "keepDays"?}, …]}`` or one
    policy's ``{"name", "enabled"?, "keepDays"?}``. All changes apply in one
    transaction, or none."""

    policies: Annotated[list[PolicyPatch], Field(min_length=1, max_length=20)] | None = None
    name: PolicyName | None = None
    enabled: bool | None = None
    keep_days: KeepDays | None = None

    @model_validator(mode="after")
    def _one_form(self) -> Self:
        if (self.policies is None) == (self.name is None):
            raise ValueError("give either policies (a list) or the name of one policy")
        if self.policies is not None and (self.enabled is not None or self.keep_days is not None):
            raise ValueError("enabled and keepDays go inside each entry of policies")
        return self

    def changes(self) -> list[tuple[str, rp.PolicyChange]]:
        """(field path, change) per entry."""
        if self.policies is None:
            assert self.name is not None
            return [("name", rp.PolicyChange(self.name, self.enabled, self.keep_days))]
        return [
            (f"policies[{i}].name", rp.PolicyChange(p.name, p.enabled, p.keep_days))
            for i, p in enumerate(self.policies)
        ]


class PolicySelection(RequestModel):
    """Which policies (default: all of them)."""

    policies: Annotated[list[PolicyName], Field(max_length=20)] | None = None


OptionalSelection = Annotated[PolicySelection, Body(default_factory=PolicySelection)]

# ---------------------------------------------------------------- responses


class RetentionPolicyPublic(ApiModel):
    name: str
    description: str
    enabled: bool
    keep_days: int
    default_enabled: bool
    default_keep_days: int
    updated_by: str | None = None
    updated_at: datetime | None = None


class RetentionSchedule(ApiModel):
    time_of_day: str = Field(description="Local time (HH:MM) of the daily run.")
    time_zone: str


class RetentionPolicies(ApiModel):
    items: list[RetentionPolicyPublic]
    schedule: RetentionSchedule


class RetentionItem(ApiModel):
    policy: str
    enabled: bool
    keep_days: int
    cutoff: datetime
    rows: int
    tables: dict[str, int]
    batches: int = 0
    duration_ms: int = 0
    skipped: str | None = Field(
        default=None, description="disabled, table_missing or unsupported_table"
    )
    partitions_dropped: int = Field(
        default=0,
        description="history partitions dropped whole (PostgreSQL; their rows are in tables)",
    )


class RetentionPreview(ApiModel):
    now: datetime
    rows: int
    items: list[RetentionItem]


class RetentionRun(ApiModel):
    id: int
    trigger: str
    actor: str
    status: str
    started_at: datetime
    finished_at: datetime | None = None
    duration_ms: int | None = None
    rows_removed: int
    partitions_dropped: int = Field(default=0, description="history partitions dropped whole")
    error: str | None = None
    items: list[RetentionItem]
    batch_id: str | None = None  # GET /engine/batches/{batchId} (issue 29 item 4)
    counts: BatchCounts | None = None


class RetentionRunList(ApiModel):
    items: list[RetentionRun]


# ------------------------------------------------------------------- routes


async def _policies(ctx: Ctx) -> RetentionPolicies:
    async with ctx.db.read() as conn:
        items = await rp.load_policies(conn)
    settings = ctx.settings
    return RetentionPolicies(
        items=[RetentionPolicyPublic.model_validate(p.public()) for p in items],
        schedule=RetentionSchedule(
            time_of_day=settings.retention_time_of_day,
            time_zone=settings.retention_time_zone or server_time_zone(),
        ),
    )


@router.get("/policies", response_model=RetentionPolicies, dependencies=[MONITOR])
async def list_policies(ctx: Ctx) -> RetentionPolicies:
    """Every policy with its effective settings and default, and the daily
    schedule."""
    return await _policies(ctx)


@router.patch(
    "/policies",
    response_model=RetentionPolicies,
    dependencies=[
        allow(ENGINE_OPERATE, audit=Audit("retention.policies_update", "retention_policy"))
    ],
)
async def update_policies(
    ctx: Ctx,
    caller: CurrentCaller,
    body: PoliciesPatch,
) -> RetentionPolicies:
    """Enable or disable policies and change how many days they keep."""
    await actions.update_policies(ctx, caller, body.changes())
    return await _policies(ctx)


@router.post("/preview", response_model=RetentionPreview, dependencies=[MONITOR])
async def preview_retention(ctx: Ctx, body: OptionalSelection) -> RetentionPreview:
    """How many rows a run now would remove, per policy and table."""
    result = await ops.preview(ctx.db, now=ctx.now(), policies=body.policies)
    return RetentionPreview.model_validate(result)


@router.post(
    "/run",
    response_model=RetentionRun,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("retention.run", "retention_run"))],
)
async def run_retention(
    ctx: Ctx,
    caller: CurrentCaller,
    body: OptionalSelection,
) -> RetentionRun:
    """Run the enabled policies now, in batches; returns the recorded run."""
    run = await actions.run_now(ctx, caller, body.policies)
    return RetentionRun.model_validate(run)


@router.get("/runs", response_model=RetentionRunList, dependencies=[MONITOR])
async def list_runs(ctx: Ctx, limit: Annotated[int, Query(ge=1, le=100)] = 20) -> RetentionRunList:
    """The newest retention runs first, with their per-policy results."""
    runs = await ops.list_runs(ctx.db, limit=limit)
    return RetentionRunList(items=[RetentionRun.model_validate(r) for r in runs])
