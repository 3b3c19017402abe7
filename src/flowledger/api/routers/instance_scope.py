"""Suspend and resume by definition under ``/api/workflows/instances``
(issue 31 item 3):

- ``POST /instances/scope-preview`` — the dry run: how many running
  (``action: resume``: suspended) instances of ``definitionKey`` [version]
  [at ``nodeKey``] [only ``instanceIds``] the run would take, a sample of
  their ids and the instances skipped by status
  (``workflow:instance:monitor``);
- ``POST /instances/scope-suspend`` / ``scope-resume`` — the run: each
  instance through the single-instance suspend (resume), in its own
  transaction, with an outcome per instance; at most ``rate`` per second
  when given (1 to 200), a run longer than 60 s at that rate being refused
  before anything is written (422 ``rate_too_slow`` naming ``rate``; the
  preview takes ``rate`` too and answers the run's ``estimatedCompletion``).

Runs need ``workflow:engine:operate`` (the permission of the single-instance
suspend) and are audited: one ``definition.suspend_all`` /
``definition.resume_all`` row for the batch (target the definition key,
totals in its detail) and one ``instance.suspend`` / ``instance.resume`` row
per instance acted on. Only the caller's tenants are selected. The
mechanics and the audit are
:func:`flowledger.ops.interventions.scope_suspend.run_audited`."""

from __future__ import annotations

from fastapi import APIRouter

from flowledger.access.callers import Caller
from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import ApiContext, Ctx
from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.scope_schemas import (
    DefinitionScope,
    ScopePreviewPublic,
    ScopePreviewRequest,
    ScopeResume,
    ScopeRunPublic,
    ScopeSuspend,
)
from flowledger.ops.batch.pacing import MAX_PACED_SECONDS
from flowledger.ops.interventions.scope_suspend import (
    Action,
    ScopeSelection,
    preview_scope,
    run_audited,
)

router = APIRouter(prefix="/instances", tags=["instances"], route_class=GuardedRoute)


def _selection(body: DefinitionScope, caller: Caller) -> ScopeSelection:
    return ScopeSelection(
        definition_key=body.definition_key,
        version=body.version,
        node_key=body.node_key,
        instance_ids=None if body.instance_ids is None else tuple(body.instance_ids),
        tenants=None if caller.tenant_scope is None else tuple(caller.tenant_scope),
    )


@router.post(
    "/scope-preview", response_model=ScopePreviewPublic, dependencies=[allow(INSTANCE_MONITOR)]
)
async def preview_definition_scope(
    body: ScopePreviewRequest, ctx: Ctx, caller: CurrentCaller
) -> ScopePreviewPublic:
    """What ``scope-suspend`` (``scope-resume``) would act on: count, a sample
    of ids, and the instances of the selection skipped by their status."""
    doc = await preview_scope(ctx.engine, _selection(body, caller), body.action, rate=body.rate)
    return ScopePreviewPublic.model_validate(doc)


async def _run(
    ctx: ApiContext,
    caller: Caller,
    body: DefinitionScope,
    action: Action,
    reason: str | None,
) -> ScopeRunPublic:
    doc = await run_audited(
        ctx,
        caller,
        ctx.engine,
        _selection(body, caller),
        action,
        reason=reason,
        rate=body.rate,
        max_seconds=MAX_PACED_SECONDS,
    )
    return ScopeRunPublic.model_validate(doc)


@router.post(
    "/scope-suspend",
    response_model=ScopeRunPublic,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("definition.suspend_all", "definition"))],
)
async def suspend_definition_scope(
    body: ScopeSuspend, ctx: Ctx, caller: CurrentCaller
) -> ScopeRunPublic:
    """Suspend every running instance of the selection, each in its own
    transaction (their advancement jobs pause, SPEC L-18)."""
    return await _run(ctx, caller, body, "suspend", body.reason.strip())


@router.post(
    "/scope-resume",
    response_model=ScopeRunPublic,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("definition.resume_all", "definition"))],
)
async def resume_definition_scope(
    body: ScopeResume, ctx: Ctx, caller: CurrentCaller
) -> ScopeRunPublic:
    """Resume every suspended instance of the selection, each in its own
    transaction (paused jobs continue with their remaining time)."""
    return await _run(ctx, caller, body, "resume", body.reason)
