"""Instance diagnostics and operations under ``/api/workflows/instances``
(SPEC O-3, O-4, O-6, O-7, O-10, O-12):

- ``GET /instances/{id}/diagnostics`` — every view in one document, or one
  with ``?view=`` (trace pages with ``limit`` / ``cursor``; ``kind=intervention``
  keeps the operators' interventions alone, issue 31), plus the
  consistency ``conclusions`` and the ``verdict`` (English ``message``s,
  with the ``messageParams`` they are made of, keyed by the conclusion's
  ``rule`` / the verdict's ``code``: see ``ops/diagnostics/consistency_messages.py``),
  the health inspection's rules run for the instance at ``thresholdMinutes``
  (10 to 1440, default 10; see ``ops/diagnostics/consistency.py``);
- ``GET /instances/{id}/force-jump/preview?target=&fromNode=`` and
  ``POST /instances/{id}/force-jump`` — the exact change, then doing it;
- ``POST /instances/batch-recover`` — skip the task at a node of many stuck
  instances, each in its own transaction, at most ``rate`` per second
  when given (a run longer than 60 s at it is refused before anything is
  written: 422 ``rate_too_slow`` naming ``rate``);
- ``GET /instances/{id}/diagnostic-bundle`` — one JSON file download.

Reads, previews and bundles need ``workflow:instance:monitor``; force jump
and batch recovery need ``workflow:engine:operate`` (declared on the route,
so a caller without it gets 403 before its body is read, and the refusal is
audited).
Another tenant's instance is 404. Mutations are audited (``instance.force_jump``
with the reason; one ``instance.recover`` row per advanced instance and one
``instance.batch_recover`` row for the batch). The read models live in
:mod:`flowledger.ops`, the mechanics in :mod:`flowledger.engine.force_jump`;
the audited actions are :func:`flowledger.ops.interventions.force_jumps.force_jump_as`
and :func:`flowledger.ops.recovery.batch_recovery.run_audited`."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated, Any, Literal, get_args

from fastapi import APIRouter, Path, Query
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

from flowledger.api import lookups
from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.instance_ops_schemas import (
    BatchRecover,
    BatchRecoverPublic,
    ForceJump,
    ForceJumpPublic,
    NodeKey,
)
from flowledger.api.pagination import Cursor
from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import MAX_ID
from flowledger.engine.force_jump import JumpOutcome
from flowledger.ops.batch.pacing import MAX_PACED_SECONDS
from flowledger.ops.diagnostics.bundle import instance_bundle
from flowledger.ops.diagnostics.consistency import DEFAULT_THRESHOLD
from flowledger.ops.diagnostics.instance import VIEWS, instance_diagnostics
from flowledger.ops.diagnostics.trace import (
    DEFAULT_TRACE_LIMIT,
    KINDS,
    MAX_TRACE_LIMIT,
)
from flowledger.ops.health.inspection import MAX_THRESHOLD_MINUTES, MIN_THRESHOLD_MINUTES
from flowledger.ops.interventions.force_jumps import force_jump_as
from flowledger.ops.recovery.batch_recovery import RecoverySelection, run_audited

router = APIRouter(prefix="/instances", tags=["instances"], route_class=GuardedRoute)

InstanceId = Annotated[int, Path(alias="instanceId", ge=1, le=MAX_ID)]
View = Literal[
    "trace", "nodes", "tasks", "triggers", "events", "tokens", "diagram", "form", "definition"
]
assert set(get_args(View)) == set(VIEWS)
TraceKind = Literal["engine", "intervention"]
assert get_args(TraceKind) == KINDS
PREVIEW_REASON = "(preview)"


MONITOR = allow(INSTANCE_MONITOR)


@router.post(
    "/batch-recover",
    response_model=BatchRecoverPublic,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("instance.batch_recover", "definition"))],
)
async def batch_recover_instances(
    body: BatchRecover, ctx: Ctx, caller: CurrentCaller
) -> BatchRecoverPublic:
    """SPEC O-6: the running instances of ``definitionKey`` whose active
    token is at ``nodeKey`` with no engine progress for ``stuckMinutes``
    (or only ``instanceIds``): each in its own transaction, the task there is
    skipped and the token advances along the node's outgoing edge. Results
    per instance (advanced / skipped with reason / failed with error) and
    totals; ``dryRun`` previews (each step rolled back). ``rate`` paces
    the run (items per second; a run longer than 60 s at it is refused,
    422 ``rate_too_slow``); a dry run answers its ``estimatedCompletion``."""
    sel = RecoverySelection(
        definition_key=body.definition_key,
        node_key=body.node_key,
        stuck_minutes=body.stuck_minutes,
        instance_ids=None if body.instance_ids is None else tuple(body.instance_ids),
        tenants=None if caller.tenant_scope is None else tuple(caller.tenant_scope),
    )
    result = await run_audited(
        ctx,
        caller,
        ctx.engine,
        sel,
        reason=body.reason,
        dry_run=body.dry_run,
        rate=body.rate,
        max_seconds=MAX_PACED_SECONDS,
    )
    return BatchRecoverPublic.model_validate(result)


@router.get(
    "/{instanceId}/diagnostics",
    dependencies=[MONITOR],
    response_class=JSONResponse,
    responses={
        200: {
            "description": "The diagnostics document (see docs/diagnostics.md). Each "
            "conclusion is `{rule, level, message, messageParams, evidence, repair, "
            "healthRule}` (`healthRule`: the health inspection rule that reports the same "
            "problem at `thresholdMinutes`, with the same level and repair; null for an O-12 "
            "check the inspection does not name), the "
            "verdict `{code, message, messageParams, action, params}`: `message` is English "
            "(the CLI's words); `messageParams` holds the values it is made of (JSON "
            "scalars, and lists of node keys or assignees), for a client that words it "
            "itself by the conclusion's `rule` / the verdict's `code` (the rule of the "
            "conclusion it names, or what a healthy instance is doing: suspended, ended, "
            "waiting_for_people, waiting_too_long, waiting_for_external_approval, "
            "waiting_for_system_task, job_in_flight, nothing_wrong); the verdict's repair "
            "is worded from `action` and `params`."
        }
    },
)
async def diagnose_instance(
    instance_id: InstanceId,
    ctx: Ctx,
    caller: CurrentCaller,
    view: Annotated[View | None, Query(description="One view only.")] = None,
    limit: Annotated[
        int, Query(ge=1, le=MAX_TRACE_LIMIT, description="Trace rows per page.")
    ] = DEFAULT_TRACE_LIMIT,
    cursor: Cursor = None,
    kind: Annotated[
        TraceKind | None,
        Query(
            description="Trace rows of one kind only: `intervention` (operators' actions on "
            "the instance, with actor, reason and changes before → after) or `engine`."
        ),
    ] = None,
    threshold_minutes: Annotated[
        int,
        Query(
            alias="thresholdMinutes",
            ge=MIN_THRESHOLD_MINUTES,
            le=MAX_THRESHOLD_MINUTES,
            description="The health inspection's threshold for the conclusions (10 to 1440).",
        ),
    ] = DEFAULT_THRESHOLD // timedelta(minutes=1),
) -> JSONResponse:
    """SPEC O-10: the instance's trace (paged), nodes, tasks, triggers,
    events, tokens (with open joins), diagram, form and definition, with the
    consistency conclusions and the verdict (O-12), each with the
    ``messageParams`` its English message is made of — or one view alone."""
    async with ctx.db.read() as conn:
        doc = await instance_diagnostics(
            conn,
            instance_id,
            tenants=caller.tenant_scope,
            now=ctx.now(),
            view=view,
            trace_limit=limit,
            trace_cursor=cursor,
            trace_kind=kind,
            threshold=timedelta(minutes=threshold_minutes),
        )
    return JSONResponse(jsonable_encoder(doc))


def _public(outcome: JumpOutcome, *, preview: bool) -> ForceJumpPublic:
    data: dict[str, Any] = outcome.to_public()
    if preview:
        data["reason"] = None
        data["createdTokens"] = [{**t, "tokenId": None} for t in data["createdTokens"]]
        data["createdTasks"] = [{**t, "taskId": None} for t in data["createdTasks"]]
        data["createdJobs"] = [{**j, "jobId": None, "taskId": None} for j in data["createdJobs"]]
    return ForceJumpPublic.model_validate({**data, "preview": preview})


@router.get(
    "/{instanceId}/force-jump/preview", response_model=ForceJumpPublic, dependencies=[MONITOR]
)
async def preview_force_jump(
    instance_id: InstanceId,
    ctx: Ctx,
    caller: CurrentCaller,
    target: Annotated[NodeKey, Query(description="The node to jump to.")],
    from_node: Annotated[
        NodeKey | None, Query(alias="fromNode", description="Move only the tokens at this node.")
    ] = None,
) -> ForceJumpPublic:
    """SPEC O-4: exactly what ``POST …/force-jump`` would change — the jump
    run under the instance lock in a transaction that is rolled back. The
    ids of what the target creates are assigned only when it is done."""
    await lookups.visible_instance(ctx, caller, instance_id)
    outcome = await ctx.engine.force_jump(
        instance_id,
        target=target,
        reason=PREVIEW_REASON,
        actor=caller.user_id,
        from_node=from_node,
        preview=True,
    )
    return _public(outcome, preview=True)


@router.post(
    "/{instanceId}/force-jump",
    response_model=ForceJumpPublic,
    dependencies=[
        allow(ENGINE_OPERATE, audit=Audit("instance.force_jump", "instance", "instanceId"))
    ],
)
async def force_jump_instance(
    instance_id: InstanceId, body: ForceJump, ctx: Ctx, caller: CurrentCaller
) -> ForceJumpPublic:
    """SPEC O-4: terminate the open tasks of the moved positions (``skipped``,
    comment ``[Admin force jump to «target»] reason``), consume their tokens,
    cancel their advancement jobs and enter ``target`` — one transaction
    under the instance lock. 409 for a terminal instance, 422 for a target
    that is not in the snapshot."""
    outcome = await force_jump_as(
        ctx,
        caller,
        ctx.engine,
        instance_id,
        target=body.target,
        reason=body.reason,
        from_node=body.from_node,
    )
    return _public(outcome, preview=False)


@router.get(
    "/{instanceId}/diagnostic-bundle",
    dependencies=[MONITOR],
    response_class=JSONResponse,
    responses={200: {"description": "The bundle, as a JSON file download."}},
)
async def download_instance_bundle(
    instance_id: InstanceId, ctx: Ctx, caller: CurrentCaller
) -> JSONResponse:
    """SPEC O-7: the diagnostics document, the instance's jobs with every
    attempt, its audit rows and the flowledger and schema versions, secrets
    redacted — one JSON file."""
    bundle = await instance_bundle(ctx.db, instance_id, tenants=caller.tenant_scope, now=ctx.now())
    return JSONResponse(
        jsonable_encoder(bundle),
        headers={
            "Content-Disposition": f'attachment; filename="instance-{instance_id}-bundle.json"'
        },
    )
