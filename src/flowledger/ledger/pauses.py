"""Paused scopes of the ledger (issue 31 item 3): a whole pool, or one job
type, is paused by someone, for a reason, since a time. While paused, claims
skip its pending jobs (:mod:`flowledger.ledger.driver.pause_filter`): they
stay ``pending`` with their ``run_at`` unchanged, and running jobs finish as
usual. The pause is a row of ``workflow_job_pauses``, so it holds for every
worker process and survives restarts. Resuming deletes the row and sends the
wake hint of every pool with pending jobs of the scope (committed with the
delete, as an enqueue hints), so idle workers claim at once.

The functions take the caller's open transaction; which pools and types
exist is the caller's to check (the runtime's job type registry)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db import wake
from flowledger.db.schema import workflow_job_pauses as pauses
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import ConflictError, FlowledgerError, NotFoundError
from flowledger.ledger.types import JobTypeRegistry
from flowledger.states import JobStatus

__all__ = [
    "SCOPES",
    "AlreadyPaused",
    "NotPaused",
    "Pause",
    "Scope",
    "UnknownScope",
    "check_scope",
    "pause_scope",
    "pauses_list",
    "resume_scope",
]

Scope = Literal["pool", "job_type"]
SCOPES: tuple[Scope, ...] = ("pool", "job_type")


@dataclass(frozen=True)
class Pause:
    scope: Scope
    value: str
    paused_by: str
    reason: str
    since: datetime


def _pause(row: object) -> Pause:
    m = row._mapping  # type: ignore[attr-defined]
    return Pause(m["scope"], m["value"], m["paused_by"], m["reason"], m["since"])


async def pauses_list(conn: AsyncConnection) -> list[Pause]:
    """Every paused scope, pools first, then by name."""
    rows = await conn.execute(select(pauses).order_by(pauses.c.scope.desc(), pauses.c.value))
    return [_pause(row) for row in rows]


async def pause_scope(
    conn: AsyncConnection, scope: Scope, value: str, *, by: str, reason: str, now: datetime
) -> Pause:
    """Pause ``scope`` = ``value``; a ConflictError (``already_paused``) when it is."""
    found = await conn.execute(
        select(pauses).where(pauses.c.scope == scope, pauses.c.value == value)
    )
    existing = found.first()
    if existing is not None:
        raise AlreadyPaused(_pause(existing))
    await conn.execute(
        pauses.insert().values(scope=scope, value=value, paused_by=by, reason=reason, since=now)
    )
    return Pause(scope, value, by, reason, now)


async def _pools_of(conn: AsyncConnection, scope: Scope, value: str) -> list[str]:
    if scope == "pool":
        return [value]
    rows = await conn.execute(
        select(jobs.c.pool)
        .where(jobs.c.status == JobStatus.PENDING.value, jobs.c.type == value)
        .distinct()
    )
    return sorted(str(r[0]) for r in rows)


async def resume_scope(conn: AsyncConnection, scope: Scope, value: str) -> Pause:
    """Resume ``scope`` = ``value`` (NotFoundError ``not_paused`` when it is
    not paused) and hint its pools' workers; the pause that ended."""
    found = await conn.execute(
        delete(pauses).where(pauses.c.scope == scope, pauses.c.value == value).returning(*pauses.c)
    )
    row = found.first()
    if row is None:
        raise NotPaused(scope, value)
    for pool in await _pools_of(conn, scope, value):
        await wake.hint(conn, pool)
    return _pause(row)


class AlreadyPaused(ConflictError):
    code = "already_paused"

    def __init__(self, pause: Pause) -> None:
        super().__init__(
            f"{pause.scope} {pause.value!r} is already paused (by {pause.paused_by})",
            field="value",
            pausedBy=pause.paused_by,
            since=pause.since.isoformat(),
        )


class UnknownScope(FlowledgerError):
    """A pool or job type the caller's registry does not know (422 naming ``field``)."""

    def __init__(self, scope: Scope, value: str, known: list[str], field: str) -> None:
        self.code = f"unknown_{scope}"
        what = "pool" if scope == "pool" else "job type"
        super().__init__(
            f"unknown {what} {value!r} (known: {', '.join(known)})", field=field, known=known
        )


def check_scope(registry: JobTypeRegistry, scope: Scope, value: str, *, field: str) -> None:
    """UnknownScope unless ``registry`` knows the pool / job type ``value``."""
    if scope == "pool" and value not in registry.pools:
        raise UnknownScope(scope, value, sorted(registry.pools), field)
    if scope == "job_type" and value not in registry:
        raise UnknownScope(scope, value, [t.name for t in registry.types()], field)


class NotPaused(NotFoundError):
    code = "not_paused"

    def __init__(self, scope: str, value: str) -> None:
        super().__init__(f"{scope} {value!r} is not paused", field="value")
