"""Instance migration to another definition version (issue 30):

- ``POST /api/workflows/migrations/preview`` — the dry run: counts by
  verdict and by block reason over every selected instance, and the
  per-instance documents (``verdict`` filters them; ``limit``/``offset``
  page them); writes nothing;
- ``POST /api/workflows/migrations`` — the run: saves the plan, migrates
  every instance not blocked, each in its own transaction, and answers the
  saved plan's id with its progress (the run finishes before the answer);
  one ``operation_audit`` row for the run (``migration.run``) and one per
  migrated instance (``instance.migrate``);
- ``GET /api/workflows/migrations/{id}`` — a saved plan, its progress and
  per-instance results (``outcome`` filters);
- ``GET /api/workflows/definitions/{key}/versions/running`` — version
  drainage: running and suspended instances per version, oldest first.

The writes need ``workflow:engine:operate``; the reads
``workflow:instance:monitor``. A plan naming an unknown version, node,
instance or form field is a 422 naming the field (``toVersion``,
``fromVersions``, ``mapping.<node>``, ``instanceIds``, ``fieldValues.<key>``);
a run without a reason is 422 ``reason_required``. The service is
:mod:`flowledger.ops.migration`."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Path, Query
from pydantic import AfterValidator, Field

from flowledger.access.callers import Caller
from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import (
    MAX_ID,
    NO_NUL,
    ApiModel,
    DefinitionKey,
    Reason,
    RequestModel,
    UtcTime,
    no_nul_inside,
)
from flowledger.ops.migration import service
from flowledger.ops.migration.model import MAX_IDS, MigrationPlan
from flowledger.ops.migration.operator_runs import check_plan, run_as
from flowledger.ops.monitor.filters import InstanceFilter

router = APIRouter(tags=["migrations"], route_class=GuardedRoute)

NodeKey = Annotated[str, Field(min_length=1, max_length=128), NO_NUL]
FilterText = Annotated[str, Field(max_length=128), NO_NUL]
Version = Annotated[int, Field(ge=1, le=2**31 - 1)]
Verdict = Literal["ok", "changed", "blocked"]
Outcome = Literal["migrated", "blocked", "failed"]


class MigrationFilterBody(RequestModel):
    """The instances-list filters a plan may select by (besides key and versions)."""

    statuses: list[Literal["running", "suspended"]] | None = Field(default=None, max_length=2)
    initiator: FilterText | None = None
    current_node: FilterText | None = None
    current_assignee: FilterText | None = None
    created_from: UtcTime | None = None
    created_to: UtcTime | None = None
    keyword: Annotated[str, Field(max_length=200), NO_NUL] | None = None


class MigrationBody(RequestModel):
    definition_key: DefinitionKey
    from_versions: list[Version] = Field(min_length=1, max_length=100)
    to_version: Version
    instance_ids: list[Annotated[int, Field(ge=1, le=MAX_ID)]] | None = Field(
        default=None, min_length=1, max_length=MAX_IDS
    )
    filter: MigrationFilterBody | None = None
    mapping: dict[NodeKey, NodeKey] = Field(default_factory=dict, max_length=1000)
    field_values: Annotated[
        dict[Annotated[str, Field(max_length=128)], Any],
        Field(max_length=200),
        AfterValidator(no_nul_inside),
    ] = Field(default_factory=dict)
    reason: Reason = ""
    name: Annotated[str, Field(max_length=255), NO_NUL] | None = None
    tenant: str | None = Field(default=None, pattern=r"^[A-Za-z0-9_.-]{1,64}$")

    def plan(self, caller: Caller) -> MigrationPlan:
        """The plan as asked (checked by :func:`check_plan`)."""
        tenant = self.tenant or caller.default_tenant
        scope = caller.tenant_scope
        chosen = None
        if self.filter is not None:
            f = self.filter
            chosen = InstanceFilter(
                statuses=None if f.statuses is None else tuple(f.statuses),
                initiator=f.initiator,
                current_node=f.current_node,
                current_assignee=f.current_assignee,
                created_from=f.created_from,
                created_to=f.created_to,
                keyword=f.keyword,
            )
        return MigrationPlan(
            definition_key=self.definition_key,
            from_versions=tuple(sorted(set(self.from_versions))),
            to_version=self.to_version,
            reason=self.reason,
            instance_ids=None if self.instance_ids is None else tuple(self.instance_ids),
            filter=chosen,
            mapping=dict(self.mapping),
            field_values=dict(self.field_values),
            name=self.name,
            tenant=tenant,
            tenants=None if scope is None else tuple(scope),
        )


class PreviewBody(MigrationBody):
    verdict: Verdict | None = None
    limit: int = Field(default=200, ge=1, le=MAX_IDS)
    offset: int = Field(default=0, ge=0, le=MAX_IDS)


class InstanceResultPublic(ApiModel):
    instance_id: int
    from_version: int
    to_version: int
    verdict: Verdict
    reasons: list[dict[str, Any]]
    changes: list[dict[str, Any]]
    tokens: list[dict[str, Any]]
    tasks: list[dict[str, Any]]
    joins: list[dict[str, Any]]
    jobs: list[dict[str, Any]]
    subprocesses: list[dict[str, Any]]
    form_added: dict[str, Any]


class VerdictCounts(ApiModel):
    ok: int
    changed: int
    blocked: int


class MigrationPreviewPublic(ApiModel):
    definition_key: str
    from_versions: list[int]
    to_version: int
    mapping: dict[str, str]
    total: int
    counts: VerdictCounts
    reason_counts: dict[str, int]
    instances: list[InstanceResultPublic]


class MigrationItemPublic(ApiModel):
    instance_id: int
    verdict: Verdict
    outcome: Outcome
    error: str | None = None
    result: dict[str, Any]


class MigrationProgress(ApiModel):
    total: int
    done: int
    by_outcome: dict[str, int]


class MigrationPublic(ApiModel):
    id: int
    name: str
    tenant: str
    definition_key: str
    from_versions: list[int]
    to_version: int
    selection: dict[str, Any]
    mapping: dict[str, str]
    field_values: dict[str, Any]
    reason: str
    status: Literal["draft", "running", "done"]
    created_by: str
    created_at: datetime
    finished_at: datetime | None = None
    progress: MigrationProgress
    items: list[MigrationItemPublic]


class RunningVersion(ApiModel):
    version: int
    running: int
    suspended: int
    oldest_started_at: datetime


class RunningVersionsPublic(ApiModel):
    definition_key: str
    versions: list[RunningVersion]


@router.post(
    "/migrations/preview",
    response_model=MigrationPreviewPublic,
    dependencies=[allow(ENGINE_OPERATE)],
)
async def preview_migration(
    body: PreviewBody, ctx: Ctx, caller: CurrentCaller
) -> MigrationPreviewPublic:
    """The exact dry run of the plan, per instance; writes nothing."""
    plan = check_plan(body.plan(caller), caller)
    found = await service.preview(ctx.db, plan, actor=caller.user_id, clock=ctx.engine.clock)
    shown = [r for r in found.results if body.verdict is None or r["verdict"] == body.verdict]
    return MigrationPreviewPublic.model_validate(
        {
            "definitionKey": plan.definition_key,
            "fromVersions": list(plan.from_versions),
            "toVersion": plan.to_version,
            "mapping": found.mapping,
            "total": len(found.results),
            "counts": found.counts(),
            "reasonCounts": found.reason_counts(),
            "instances": shown[body.offset : body.offset + body.limit],
        }
    )


@router.post(
    "/migrations",
    response_model=MigrationPublic,
    status_code=201,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("migration.run", "migration"))],
)
async def run_migration(body: MigrationBody, ctx: Ctx, caller: CurrentCaller) -> MigrationPublic:
    """Save the plan and migrate every instance its dry run does not block."""
    migration_id = await run_as(
        ctx, caller, body.plan(caller), store=ctx.engine.store, clock=ctx.engine.clock
    )
    return MigrationPublic.model_validate(
        await service.progress(ctx.db, migration_id, tenants=_scope(caller))
    )


def _scope(caller: Caller) -> tuple[str, ...] | None:
    scope = caller.tenant_scope
    return None if scope is None else tuple(scope)


@router.get(
    "/migrations/{migration_id}",
    response_model=MigrationPublic,
    dependencies=[allow(INSTANCE_MONITOR, ENGINE_OPERATE)],
)
async def read_migration(
    migration_id: Annotated[int, Path(ge=1, le=MAX_ID)],
    ctx: Ctx,
    caller: CurrentCaller,
    outcome: Outcome | None = None,
    limit: Annotated[int, Query(ge=1, le=MAX_IDS)] = 500,
    offset: Annotated[int, Query(ge=0)] = 0,
) -> MigrationPublic:
    """A saved plan, its progress and its per-instance results."""
    found = await service.progress(
        ctx.db, migration_id, tenants=_scope(caller), outcome=outcome, limit=limit, offset=offset
    )
    return MigrationPublic.model_validate(found)


@router.get(
    "/definitions/{key}/versions/running",
    response_model=RunningVersionsPublic,
    dependencies=[allow(INSTANCE_MONITOR, ENGINE_OPERATE)],
)
async def running_versions(
    key: Annotated[str, Path(min_length=1, max_length=64)], ctx: Ctx, caller: CurrentCaller
) -> RunningVersionsPublic:
    """Running instances per version of ``key``, oldest version first."""
    rows = await service.running_versions(ctx.db, key, tenants=_scope(caller))
    return RunningVersionsPublic.model_validate({"definitionKey": key, "versions": rows})
