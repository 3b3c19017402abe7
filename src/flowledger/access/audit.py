"""The operation audit (SPEC A-2): every mutation through the API or the
CLI's operator commands — success or failure — leaves one ``operation_audit`` row: actor, action
(``instance.cancel``), target type and id, tenant, reason, detail and result
(``ok`` / ``failed``, with ``detail.code`` of the error when it failed).

Two ways to write it, one rule for failures:

- :func:`audited_change` — for a service that makes its change in one
  transaction of its own (an alert rule, a connector, a retention policy,
  a job pause …): the service opens that transaction through it, so the
  change and its ``ok`` row commit together or not at all. The service names
  its action and builds its :class:`AuditEntry` from the caller
  (:meth:`AuditEntry.by`); the route only passes the caller along.
- :func:`audited` — around a call that commits on its own (the engine's
  facade opens and commits its own transaction per action; a batch commits
  per item), which the row cannot join: it is written **after** the call, in
  a transaction of its own. The cost is a small window: a crash between the
  call's commit and the audit commit loses the audit row of a change that did
  happen (the engine trace, E-8, still records the change and its actor). If
  writing that row fails, the error is logged and the caller still gets the
  real outcome — the change is committed and must not be reported as failed.

Either way a block that raises is recorded ``failed`` (``detail.code`` and
``message`` of the error, ``internal_error`` for anything else) in a
transaction of its own: the failed change rolled back, so the row recording
the failure cannot live in its transaction.

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
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Protocol

from sqlalchemy.ext.asyncio import AsyncConnection

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
    """One ``operation_audit`` row being filled in: who did what to which
    target; the code doing the change adds what it learns (tenant, the new
    target's id, detail)."""

    actor: str
    action: str
    target_type: str
    target_id: str | None = None
    tenant_id: str | None = None
    reason: str | None = None
    detail: dict[str, Any] = field(default_factory=dict)
    #: its row is written (``ok`` in the change's own transaction, or
    #: ``failed``): :func:`audited` then writes none of its own
    written: bool = field(default=False, compare=False)

    @classmethod
    def by(
        cls,
        caller: Caller,
        action: str,
        target_type: str,
        target_id: int | str | None = None,
        *,
        reason: str | None = None,
    ) -> AuditEntry:
        """The entry of ``caller`` attempting ``action`` on a target."""
        return cls(
            actor=caller.user_id,
            action=action,
            target_type=target_type,
            target_id=None if target_id is None else str(target_id),
            reason=reason,
        )

    def failed_with(self, exc: BaseException) -> None:
        """Record in the detail why the attempt failed."""
        if isinstance(exc, FlowledgerError):
            self.detail["code"] = exc.code
            self.detail["message"] = exc.message
        else:
            self.detail["code"] = "internal_error"


async def insert_audit(
    conn: AsyncConnection, entry: AuditEntry, result: str, *, now: datetime
) -> None:
    """Insert the row in the caller's transaction (errors propagate)."""
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
            created_at=now,
        )
    )
    entry.written = True


async def write_audit(ctx: AuditContext, entry: AuditEntry, result: str) -> None:
    """Write the row in a transaction of its own; a failure to write it is
    logged, not raised (the outcome it records stands)."""
    try:
        async with ctx.db.begin() as conn:
            await insert_audit(conn, entry, result, now=ctx.now())
    except Exception:
        log.exception("could not write the audit row for %s", entry.action)


@asynccontextmanager
async def audited_change(ctx: AuditContext, entry: AuditEntry) -> AsyncIterator[AsyncConnection]:
    """One transaction for a service's change and its ``ok`` audit row: the
    block makes the change on the connection it is given and fills in
    ``entry``; the row is inserted before the commit. If the block (or the
    insert, or the commit) raises, everything rolls back and the ``failed``
    row is written in a transaction of its own. Either way ``entry.written``
    is set, so an enclosing :func:`audited` block writes no second row."""
    try:
        async with ctx.db.begin() as conn:
            yield conn
            await insert_audit(conn, entry, "ok", now=ctx.now())
    except Exception as exc:
        entry.failed_with(exc)
        await write_audit(ctx, entry, "failed")
        raise


@dataclass(frozen=True)
class _At:
    """An :class:`AuditContext` of a database and a clock reading."""

    db: Database
    clock: Callable[[], datetime]

    def now(self) -> datetime:
        return self.clock()


@asynccontextmanager
async def change_transaction(
    db: Database, audit: AuditEntry | None, now: Callable[[], datetime]
) -> AsyncIterator[AsyncConnection]:
    """A service's one transaction for a change: ``db.begin()``, or, given
    the caller's ``audit`` entry, :func:`audited_change` — the change and its
    ``ok`` row commit together (``now``: the clock the row is stamped by)."""
    if audit is None:
        async with db.begin() as conn:
            yield conn
    else:
        async with audited_change(_At(db, now), audit) as conn:
            yield conn


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
    learns (tenant, new target id, detail) and hands ``entry`` to the
    service that makes the change, which writes the ``ok`` row in the
    change's own transaction (:func:`audited_change`; the engine's facade
    takes it as ``audit=``) — or, when no service took it, the row is written
    here as the block ends. A block that raises before a service wrote the
    row (a refused or missing target) writes its ``failed`` row here."""
    entry = AuditEntry.by(caller, action, target_type, target_id, reason=reason)
    try:
        yield entry
    except Exception as exc:
        if not entry.written:
            entry.failed_with(exc)
            await write_audit(ctx, entry, "failed")
        raise
    if not entry.written:
        await write_audit(ctx, entry, "ok")
