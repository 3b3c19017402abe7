"""Paused scopes of the job ledger under ``/api/workflows/engine/job-pauses``
(issue 31 item 3):

- ``GET /engine/job-pauses`` — every paused pool and job type, with who
  paused it, why and since when (``workflow:instance:monitor``);
- ``POST /engine/job-pauses`` ``{pool | jobType, reason}`` — pause: claims
  skip the scope's pending jobs, which stay pending with their due times;
- ``POST /engine/job-pauses/resume`` ``{pool | jobType, reason?}`` — resume:
  the pause ends and the scope's pools are woken.

Mutations need ``workflow:engine:operate`` and are audited
(``job_scope.pause`` / ``job_scope.resume``, target ``pool`` or
``job_type``). A pool or job type this API's runtime does not know is 422
``unknown_pool`` / ``unknown_job_type`` naming ``pool`` / ``jobType``; pausing a paused scope is 409
``already_paused``, resuming one that is not paused 404 ``not_paused``. Each change
is one call of :mod:`flowledger.ops.jobs.pauses` (its transaction and audit
row); the mechanics live in :mod:`flowledger.ledger.pauses`."""

from __future__ import annotations

from fastapi import APIRouter

from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.job_schemas import JobPausePublic
from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.scope_schemas import JobPauseList, PauseJobs, ResumeJobs
from flowledger.ledger.pauses import Pause, pauses_list
from flowledger.ops.jobs import pauses

router = APIRouter(prefix="/engine/job-pauses", tags=["jobs"], route_class=GuardedRoute)


def _public(pause: Pause) -> JobPausePublic:
    return JobPausePublic.model_validate(pause.__dict__)


@router.get("", response_model=JobPauseList, dependencies=[allow(INSTANCE_MONITOR)])
async def list_job_pauses(ctx: Ctx) -> JobPauseList:
    """Every paused pool and job type (pools first), who paused it, why, since;
    and the pools and job types that may be paused."""
    async with ctx.db.read() as conn:
        items = [_public(p) for p in await pauses_list(conn)]
    return JobPauseList(
        items=items,
        known_pools=sorted(ctx.job_types.pools),
        known_job_types=[t.name for t in ctx.job_types.types()],
    )


@router.post(
    "",
    status_code=201,
    response_model=JobPausePublic,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("job_scope.pause", "job_scope"))],
)
async def pause_jobs(body: PauseJobs, ctx: Ctx, caller: CurrentCaller) -> JobPausePublic:
    """Pause a pool or a job type: no worker claims its pending jobs until it
    is resumed (running jobs finish; nothing fails, due times are kept)."""
    pause = await pauses.pause(
        ctx,
        caller,
        body.scope,
        body.value,
        reason=body.reason.strip(),
        known=ctx.job_types,
        field=body.field,
    )
    return _public(pause)


@router.post(
    "/resume",
    response_model=JobPausePublic,
    dependencies=[allow(ENGINE_OPERATE, audit=Audit("job_scope.resume", "job_scope"))],
)
async def resume_jobs(body: ResumeJobs, ctx: Ctx, caller: CurrentCaller) -> JobPausePublic:
    """Resume a paused pool or job type; its pools' workers are woken at once.
    Answers the pause that ended."""
    pause = await pauses.resume(ctx, caller, body.scope, body.value, reason=body.reason)
    return _public(pause)
