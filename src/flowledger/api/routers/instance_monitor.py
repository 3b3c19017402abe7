"""Instance monitoring under ``/api/workflows/instances`` (SPEC O-1, O-2,
O-3): status counts for the list's filter, the CSV / XLSX export, and the
operator's form correction ("fix the data, then retry").

Counts and export need ``workflow:instance:monitor``; the correction needs
``workflow:engine:operate`` (checked before the body is read, and audited
even when refused). Everything is limited to the caller's tenants (A-3).
This router is included before :mod:`.instances`, so ``/instances/counts``
and ``/instances/export`` are never taken for an instance id.

Export headers: ``X-Total-Count`` (instances matching), ``X-Exported-Count``
(rows in the file, at most 10,000) and ``X-Truncated`` (``true`` /
``false``); the XLSX file repeats them in a note row after the data.
"""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import StreamingResponse
from starlette.background import BackgroundTask

from flowledger.api import lookups
from flowledger.api.audit import audited
from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.instance_params import SortParam, instance_filter_params, scoped
from flowledger.api.monitor_schemas import FormCorrection, FormCorrectionResult, InstanceCounts
from flowledger.api.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import MAX_ID
from flowledger.ops.interventions.form_corrections import correct_form
from flowledger.ops.monitor import export as instance_export
from flowledger.ops.monitor import queries as instance_queries
from flowledger.ops.monitor.filters import InstanceFilter

router = APIRouter(prefix="/instances", tags=["instances"], route_class=GuardedRoute)

InstanceId = Annotated[int, Path(alias="instanceId", ge=1, le=MAX_ID)]
Filters = Annotated[InstanceFilter, Depends(instance_filter_params)]

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"
CSV = "text/csv; charset=utf-8"


@router.get("/counts", response_model=InstanceCounts, dependencies=[allow(INSTANCE_MONITOR)])
async def count_instances(ctx: Ctx, caller: CurrentCaller, flt: Filters) -> InstanceCounts:
    """SPEC O-1: how many instances match the list's filter in each status
    (the console's tab badges), in one query. The ``status`` filter itself
    is not applied: every status is counted."""
    async with ctx.read_db.read() as conn:
        counts = await instance_queries.status_counts(
            conn, scoped(flt, caller).without_statuses(), now=ctx.now()
        )
    return InstanceCounts(
        counts=counts.counts,
        total=counts.total,
        estimated=bool(counts.estimated),
        estimated_statuses=sorted(counts.estimated),
    )


@router.get(
    "/export",
    response_class=StreamingResponse,
    responses={
        200: {
            "description": "The file (headers X-Total-Count, X-Exported-Count, X-Truncated)",
            "content": {"text/csv": {}, XLSX: {}},
        }
    },
    dependencies=[allow(INSTANCE_MONITOR)],
)
async def export_instances(
    ctx: Ctx,
    caller: CurrentCaller,
    flt: Filters,
    format: Annotated[Literal["csv", "xlsx"], Query(description="File format.")] = "csv",
    sort: Annotated[SortParam, Query(description="Newest first by this time.")] = "created",
) -> StreamingResponse:
    """SPEC O-2: the list's rows under its filters, at most 10,000, as CSV
    (UTF-8 with BOM) or XLSX, streamed."""
    flt = scoped(flt, caller)
    now = ctx.now()
    plan = await instance_export.plan_export(ctx.read_db, flt, now=now, sort=sort)
    stamp = now.strftime("%Y%m%dT%H%M%SZ")
    headers = {
        "X-Total-Count": str(plan.matched),
        "X-Exported-Count": str(plan.exported),
        "X-Truncated": "true" if plan.truncated else "false",
        "Content-Disposition": f'attachment; filename="instances-{stamp}.{format}"',
    }
    if format == "csv":
        stream = instance_export.csv_stream(ctx.read_db, flt, plan, now=now, sort=sort)
        return StreamingResponse(stream, media_type=CSV, headers=headers)
    path = await instance_export.xlsx_file(ctx.read_db, flt, plan, now=now, sort=sort)
    return StreamingResponse(
        instance_export.file_chunks(path),
        media_type=XLSX,
        headers=headers,
        # also when the client is gone before the body was sent
        background=BackgroundTask(instance_export.remove, path),
    )


@router.patch(
    "/{instanceId}/form",
    response_model=FormCorrectionResult,
    dependencies=[
        allow(ENGINE_OPERATE, audit=Audit("instance.correct_form", "instance", "instanceId"))
    ],
)
async def correct_instance_form(
    instance_id: InstanceId, caller: CurrentCaller, body: FormCorrection, ctx: Ctx
) -> FormCorrectionResult:
    """Correct form fields of a running or suspended instance (validated
    against its form schema, recorded in the form write history with the
    operator and reason, audited). A finished instance is 409."""
    async with audited(
        ctx, caller, "instance.correct_form", "instance", instance_id, reason=body.reason
    ) as entry:
        instance = await lookups.visible_instance(ctx, caller, instance_id)
        entry.tenant_id = instance["tenant_id"]
        entry.detail["fields"] = sorted(body.changes)
        result = await correct_form(
            ctx.engine,
            instance_id,
            body.changes,
            actor=caller.user_id,
            reason=body.reason,
            audit=entry,
        )
    return FormCorrectionResult(
        instance_id=instance_id,
        write_id=result["writeId"],
        previous=result["previous"],
        form=result["form"],
    )
