"""The operator's job actions as the API runs them (SPEC L-24, A-2), each
audited: ``job.retry`` and ``job.skip`` of one job the caller sees (404
otherwise; its status before, and for a retry whether the payload and the
operationKey changed), ``job.batch_retry`` / ``job.batch_skip`` of ids and
``job.replay`` of a filter (the counts and the submitted ids; a batch or a
replay under its replay batch id). Each action commits on its own (per job,
per chunk), so its row is written when it ends
(:func:`flowledger.access.audit.audited`). The rules are
:mod:`flowledger.ops.jobs.actions` and :mod:`flowledger.ops.jobs.replay`."""

from __future__ import annotations

from typing import Any

from flowledger.access.audit import AuditContext, audited
from flowledger.access.callers import Caller
from flowledger.ops.jobs import actions, replay
from flowledger.ops.jobs.batching import BatchResult, new_batch_id
from flowledger.ops.jobs.filters import JobFilter


def _counts(result: BatchResult) -> dict[str, Any]:
    return {"matched": result.matched, "submitted": result.submitted, "skipped": result.skipped}


async def retry_as(
    ctx: AuditContext,
    caller: Caller,
    job_id: int,
    *,
    payload: dict[str, Any] | None,
    reason: str | None,
) -> dict[str, Any]:
    """Retry one job now (a new ``payload`` gets a new operationKey)."""
    async with audited(ctx, caller, "job.retry", "job", job_id, reason=reason) as entry:
        job = await actions.visible_job(ctx.db, job_id, tenants=caller.tenant_scope)
        entry.tenant_id = job["tenant_id"]
        entry.detail.update(status=job["status"], newPayload=payload is not None)
        row = await actions.retry_job(
            ctx.db,
            job_id,
            now=ctx.now(),
            actor=caller.user_id,
            tenants=caller.tenant_scope,
            payload=payload,
            reason=reason,
        )
        entry.detail.update(
            generation=row["generation"],
            operationKeyChanged=row["operation_key"] != job["operation_key"],
        )
    return row


async def skip_job_as(
    ctx: AuditContext, caller: Caller, job_id: int, *, reason: str | None
) -> dict[str, Any]:
    """Skip (cancel) one job."""
    async with audited(ctx, caller, "job.skip", "job", job_id, reason=reason) as entry:
        job = await actions.visible_job(ctx.db, job_id, tenants=caller.tenant_scope)
        entry.tenant_id = job["tenant_id"]
        entry.detail["status"] = job["status"]
        return await actions.skip_job(
            ctx.db,
            job_id,
            now=ctx.now(),
            actor=caller.user_id,
            tenants=caller.tenant_scope,
            reason=reason,
        )


async def batch_retry_as(
    ctx: AuditContext, caller: Caller, ids: list[int], *, rate: int, reason: str | None
) -> BatchResult:
    """Retry jobs by id, staggered at ``rate`` per second under a new replay
    batch id."""
    batch_id = new_batch_id()
    async with audited(
        ctx, caller, "job.batch_retry", "job_batch", batch_id, reason=reason
    ) as entry:
        entry.detail.update(requested=len(ids), rate=rate)
        result = await actions.batch_retry(
            ctx.db,
            ids,
            now=ctx.now(),
            actor=caller.user_id,
            tenants=caller.tenant_scope,
            rate=rate,
            replay_batch_id=batch_id,
            reason=reason,
        )
        entry.detail.update(_counts(result), submittedIds=result.submitted_ids)
    return result


async def batch_skip_as(
    ctx: AuditContext, caller: Caller, ids: list[int], *, reason: str | None
) -> BatchResult:
    """Skip (cancel) jobs by id; ineligible ones are counted as skipped."""
    async with audited(ctx, caller, "job.batch_skip", "job_batch", reason=reason) as entry:
        entry.detail["requested"] = len(ids)
        result = await actions.batch_skip(
            ctx.db,
            ids,
            now=ctx.now(),
            actor=caller.user_id,
            tenants=caller.tenant_scope,
            reason=reason,
        )
        entry.detail.update(_counts(result), submittedIds=result.submitted_ids)
    return result


async def replay_as(
    ctx: AuditContext,
    caller: Caller,
    flt: JobFilter,
    *,
    shown_filter: dict[str, Any],
    limit: int,
    rate: int,
    reason: str | None,
) -> BatchResult:
    """Replay dead / failed jobs of ``flt`` under a new replay batch id;
    ``shown_filter`` is the filter as the caller gave it."""
    batch_id = new_batch_id()
    async with audited(ctx, caller, "job.replay", "job_batch", batch_id, reason=reason) as e:
        e.detail.update(filter=shown_filter)
        result = await replay.replay(
            ctx.db,
            flt,
            now=ctx.now(),
            limit=limit,
            rate=rate,
            replay_batch_id=batch_id,
            actor=caller.user_id,
            reason=reason,
        )
        e.detail.update(_counts(result), rate=rate)
    return result
