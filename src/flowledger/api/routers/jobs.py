"""Job ledger reads under ``/api/workflows/engine/jobs`` (SPEC A-1, L-23,
L-25): list, summary, runtime status, detail, chain, diagnostic bundle,
failure clusters. Reads need ``workflow:instance:monitor`` (403 otherwise)
and are never audited. Lists, counts and clusters see only the caller's
tenants; a job or chain of another tenant is 404, exactly like a missing
one. The runtime status is global (SPEC L-23) and needs the same permission.

The static paths are declared before ``/{jobId}`` so they are never taken
for an id. The queries themselves live in :mod:`flowledger.ops`.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Path, Query
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse

from flowledger.api.auth import Caller, CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.job_schemas import (
    BatchIdText,
    FailureCluster,
    FailureClusterList,
    FingerprintText,
    JobChain,
    JobDetail,
    JobPage,
    JobPublic,
    JobSummary,
    JobTypeName,
    KeywordText,
    RuntimeStatus,
    TraceIdText,
)
from flowledger.api.pagination import Cursor, Limit
from flowledger.api.permissions import INSTANCE_MONITOR
from flowledger.api.route_access import GuardedRoute, allow
from flowledger.api.schemas import MAX_ID, UtcTime
from flowledger.db.replica import replica_lag_ms
from flowledger.ops.diagnostics.bundle import chain_bundle
from flowledger.ops.jobs import failure_clusters as clusters
from flowledger.ops.jobs import queries as job_queries
from flowledger.ops.jobs.filters import JobFilter
from flowledger.ops.runtime.status import runtime_status
from flowledger.states import JobStatus

# every route here is a read for monitors (SPEC A-2)
router = APIRouter(
    prefix="/engine/jobs",
    tags=["jobs"],
    route_class=GuardedRoute,
    dependencies=[allow(INSTANCE_MONITOR)],
)

JobId = Annotated[int, Path(alias="jobId", ge=1, le=MAX_ID)]
TraceId = Annotated[TraceIdText, Path(alias="traceId")]


def _tenants(caller: Caller) -> tuple[str, ...] | None:
    scope = caller.tenant_scope
    return None if scope is None else tuple(scope)


def job_filter(
    caller: CurrentCaller,
    type: Annotated[list[JobTypeName] | None, Query(description="Job types (repeatable).")] = None,
    status: Annotated[list[JobStatus] | None, Query(description="Statuses (repeatable).")] = None,
    instance_id: Annotated[int | None, Query(alias="instanceId", ge=1, le=MAX_ID)] = None,
    trace_id: Annotated[TraceIdText | None, Query(alias="traceId")] = None,
    keyword: Annotated[
        KeywordText | None,
        Query(description="Case-insensitive substring of the last error or the type."),
    ] = None,
    fingerprint: Annotated[
        FingerprintText | None, Query(description="One error-reason cluster.")
    ] = None,
    replay_batch_id: Annotated[BatchIdText | None, Query(alias="replayBatchId")] = None,
    enqueued_before: Annotated[
        UtcTime | None, Query(alias="enqueuedBefore", description="Created at or before.")
    ] = None,
    enqueued_after: Annotated[
        UtcTime | None, Query(alias="enqueuedAfter", description="Created at or after.")
    ] = None,
    node_key: Annotated[
        KeywordText | None, Query(alias="nodeKey", description="The definition node of the job.")
    ] = None,
    definition_key: Annotated[
        KeywordText | None,
        Query(alias="definitionKey", description="Jobs of instances of this definition."),
    ] = None,
) -> JobFilter:
    """The list filters of SPEC L-25 within the caller's tenants (A-3)."""
    return JobFilter(
        types=tuple(dict.fromkeys(type)) if type else None,
        statuses=tuple(dict.fromkeys(s.value for s in status)) if status else None,
        instance_id=instance_id,
        trace_id=trace_id,
        keyword=keyword,
        fingerprint=fingerprint,
        enqueued_before=enqueued_before,
        enqueued_after=enqueued_after,
        replay_batch_id=replay_batch_id,
        tenants=_tenants(caller),
        node_key=node_key,
        definition_key=definition_key,
    )


Filter = Annotated[JobFilter, Depends(job_filter)]


@router.get("", response_model=JobPage)
async def list_jobs(ctx: Ctx, flt: Filter, limit: Limit = 50, cursor: Cursor = None) -> JobPage:
    """Jobs newest first (by id), keyset-paged: pass ``next`` back as ``cursor``."""
    page = await job_queries.list_jobs(ctx.read_db, flt, limit=limit, cursor=cursor)
    return JobPage(items=[JobPublic.model_validate(j) for j in page["items"]], next=page["next"])


@router.get("/summary", response_model=JobSummary)
async def job_summary(ctx: Ctx, flt: Filter) -> JobSummary:
    """Counts of the matching jobs by status and by type and status."""
    return JobSummary.model_validate(await job_queries.job_summary(ctx.read_db, flt))


@router.get("/runtime-status", response_model=RuntimeStatus)
async def read_runtime_status(ctx: Ctx) -> RuntimeStatus:
    """SPEC L-23: live workers, slots, in-flight, stuck, backlog, oldest
    queued, queue P95/P99 (1 h), dead, last claim, failure rate and average
    duration (1 h) — global, by database time — read on the primary; and how
    far the read replica's replay trails it (``replicaLagMs``, null without
    a replica, issue 34 item 6)."""
    status = await runtime_status(ctx.db)
    if ctx.replica is not None:
        status["replicaLagMs"] = await replica_lag_ms(ctx.replica)
    return RuntimeStatus.model_validate(status)


@router.get("/failure-clusters", response_model=FailureClusterList)
async def list_failure_clusters(
    ctx: Ctx,
    flt: Filter,
    by: Literal["reason", "type", "instance", "trace"] = "reason",
    limit: Annotated[int, Query(ge=1, le=clusters.MAX_LIMIT)] = 50,
    samples: Annotated[int, Query(ge=0, le=clusters.MAX_SAMPLES)] = 3,
) -> FailureClusterList:
    """Dead and failed jobs grouped by error reason, type, instance or traceId,
    largest first, each with its newest members and the filter that selects
    exactly its jobs for a replay."""
    items = await clusters.failure_clusters(ctx.read_db, flt, by=by, limit=limit, samples=samples)
    return FailureClusterList(by=by, items=[FailureCluster.model_validate(c) for c in items])


@router.get("/chain/{traceId}", response_model=JobChain)
async def read_job_chain(trace_id: TraceId, ctx: Ctx, caller: CurrentCaller) -> JobChain:
    """Every job of a traceId with all their attempts (across instances)."""
    chain = await job_queries.job_chain(ctx.db, trace_id, tenants=_tenants(caller))
    return JobChain.model_validate(chain)


def _filename(trace_id: str) -> str:
    return "chain-" + (re.sub(r"[^A-Za-z0-9_.-]", "_", trace_id) or "trace") + ".json"


@router.get(
    "/chain/{traceId}/diagnostic-bundle",
    response_class=JSONResponse,
    responses={200: {"description": "The bundle, as a JSON file download."}},
)
async def download_chain_bundle(trace_id: TraceId, ctx: Ctx, caller: CurrentCaller) -> JSONResponse:
    """One JSON document: the chain, its attempts and a snapshot of every
    related instance (row, tasks, tokens, comments, trace events)."""
    bundle: dict[str, Any] = await chain_bundle(
        ctx.db, trace_id, tenants=_tenants(caller), now=ctx.now()
    )
    return JSONResponse(
        jsonable_encoder(bundle),
        headers={"Content-Disposition": f'attachment; filename="{_filename(trace_id)}"'},
    )


@router.get("/{jobId}", response_model=JobDetail)
async def read_job(job_id: JobId, ctx: Ctx, caller: CurrentCaller) -> JobDetail:
    """One job with its payload, result and every attempt of every generation."""
    job = await job_queries.job_detail(ctx.db, job_id, tenants=_tenants(caller))
    return JobDetail.model_validate(job)
