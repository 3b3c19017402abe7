"""The operation audit (SPEC A-2): every mutation through the API or the
CLI's operator commands — success or failure — leaves one ``operation_audit`` row: actor, action
(``instance.cancel``), target type and id, tenant, reason, detail and result
(``ok`` / ``failed``, with ``detail.code`` of the error when it failed).

When it is written: **after** the engine call, in a transaction of its own.
The engine's facade opens and commits its own transaction per action, so the
API cannot join it; and a failed action rolls its transaction back, so the
row recording that failure has to live in another transaction anyway. One
rule for both outcomes keeps the record honest about what happened. The cost
is a small window: a crash between the engine's commit and the audit commit
loses the audit row of a change that did happen (the engine trace, E-8, still
records the change and its actor). If writing the audit row itself fails,
the error is logged and the caller still gets the real outcome of the action
— the change is committed and must not be reported as failed.

Refusals count as failures of the attempted mutation: a 403, or a 404 for an
object in another tenant, inside the audited block is recorded as
``failed``; so is a mutation refused by the permission its route declares
(``allow(..., audit=Audit(...))`` of :mod:`flowledger.api.route_access`),
before its body is read. Requests refused otherwise before a route runs (no
token: 401; a malformed body: 422 ``validation_error``) write nothing — there
is no actor or no action to record. Reads are never audited.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from flowledger.access.callers import Caller
from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit
from flowledger.errors import FlowledgerError

log = logging.getLogger("flowledger.api.audit")


class AuditContext(Protocol):
    """Where an audit row is written: a database and the clock's reading
    (the API's request context and the CLI's operator context both are)."""

    @property
    def db(self) -> Database: ...

    def now(self) -> datetime: ...


@dataclass
class AuditEntry:
    actor: str
    action: str
    target_type: str
    target_id: str | None = None
    tenant_id: str | None = None
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)


async def write_audit(ctx: AuditContext, entry: AuditEntry, result: str) -> None:
    try:
        async with ctx.db.begin() as conn:
            await conn.execute(
                operation_audit.insert().values(
                    actor=entry.actor,
                    action=entry.action,
                    target_type=entry.target_type,
                    target_id=entry.target_id,
                    tenant_id=entry.tenant_id,
                    reason=entry.reason,
                    detail=entry.detail or None,
                    result=result,
                    created_at=ctx.now(),
                )
            )
    except Exception:
        log.exception("could not write the audit row for %s", entry.action)


@asynccontextmanager
async def audited(
    ctx: AuditContext,
    caller: Caller,
    action: str,
    target_type: str,
    target_id: int | str | None = None,
    *,
    reason: str | None = None,
) -> AsyncIterator[AuditEntry]:
    """Run the block as one audited mutation. The block fills in what it
    learns (tenant, new target id, detail); the row is written when it ends."""
    entry = AuditEntry(
        actor=caller.user_id,
        action=action,
        target_type=target_type,
        target_id=None if target_id is None else str(target_id),
        reason=reason,
    )
    try:
        yield entry
    except FlowledgerError as exc:
        entry.detail["code"] = exc.code
        entry.detail["message"] = exc.message
        await write_audit(ctx, entry, "failed")
        raise
    except Exception:
        entry.detail["code"] = "internal_error"
        await write_audit(ctx, entry, "failed")
        raise
    await write_audit(ctx, entry, "ok")
