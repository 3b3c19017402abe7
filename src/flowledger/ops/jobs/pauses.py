"""Pausing and resuming a pool or a job type (issue 31 item 3, SPEC L-24,
A-2), each one transaction holding the change and its audit row
(``job_scope.pause`` / ``job_scope.resume``, target ``pool`` or
``job_type``). The mechanics live in :mod:`flowledger.ledger.pauses`."""

from __future__ import annotations

from flowledger.access.audit import AuditContext, AuditEntry, audited_change
from flowledger.access.callers import Caller
from flowledger.ledger.pauses import Pause, Scope, check_scope, pause_scope, resume_scope
from flowledger.ledger.types import JobTypeRegistry


async def pause(
    ctx: AuditContext,
    caller: Caller,
    scope: Scope,
    value: str,
    *,
    reason: str,
    known: JobTypeRegistry,
    field: str,
) -> Pause:
    """Pause ``scope`` = ``value``: 422 naming ``field`` when ``known`` has no
    such pool or job type, 409 ``already_paused`` when it is paused."""
    entry = AuditEntry.by(caller, "job_scope.pause", scope, value, reason=reason)
    async with audited_change(ctx, entry) as conn:
        check_scope(known, scope, value, field=field)
        return await pause_scope(
            conn, scope, value, by=caller.user_id, reason=reason, now=ctx.now()
        )


async def resume(
    ctx: AuditContext,
    caller: Caller,
    scope: Scope,
    value: str,
    *,
    reason: str | None,
    known: JobTypeRegistry | None = None,
    field: str = "",
) -> Pause:
    """Resume ``scope`` = ``value`` (404 ``not_paused`` when it is not; with
    ``known``, 422 naming ``field`` when it has no such pool or job type);
    answers the pause that ended."""
    entry = AuditEntry.by(caller, "job_scope.resume", scope, value, reason=reason)
    async with audited_change(ctx, entry) as conn:
        if known is not None:
            check_scope(known, scope, value, field=field)
        ended = await resume_scope(conn, scope, value)
        entry.detail.update(pausedBy=ended.paused_by, pausedSince=ended.since.isoformat())
        return ended
