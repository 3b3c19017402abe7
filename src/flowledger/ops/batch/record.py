"""The recorded batch operation (issue 29 item 4), as Temporal's
BatchOperation: :class:`BatchRecorder` starts a row in
``workflow_batch_operations`` (state ``running``, its id, kind, actor,
reason, the request and the total), writes progress while the runner goes
(counts per outcome), and closes it ``completed`` with every item's result,
or ``failed`` with the error when the batch itself broke (never for an
item's failure: that is the item's ``failed`` outcome). Each write is its
own short transaction, apart from the items' own.

:func:`describe` reads one batch by id, :func:`list_batches` pages the
newest first. Tenant scope: a batch remembers the caller's scope
(``tenant_scope``, NULL for every tenant); a caller of every tenant sees
every batch, a scoped caller describes a batch whose scope lies within its
own and lists the batches started under exactly its own scope."""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, TypeVar

from sqlalchemy import and_, insert, or_, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.batch_schema import workflow_batch_operations as batches
from flowledger.db.database import Database
from flowledger.ops.batch.outcome import Counts, ItemOutcome
from flowledger.ops.batch.runner import run_items
from flowledger.ops.batch.selection import Selection

T = TypeVar("T")
Clock = Callable[[], datetime]


def scope_key(tenants: Sequence[str] | None) -> str | None:
    return None if tenants is None else ",".join(sorted(set(tenants)))


def new_batch_id() -> str:
    return uuid.uuid4().hex


@dataclass
class BatchOperation:
    """A finished (or broken) batch as its caller gets it back."""

    id: str
    kind: str
    outcomes: list[ItemOutcome] = field(default_factory=list)
    total: int = 0

    @property
    def counts(self) -> Counts:
        return Counts.of(self.outcomes, self.total)


class BatchRecorder:
    """Records one batch operation; see the module docstring."""

    def __init__(
        self,
        db: Database,
        kind: str,
        *,
        actor: str,
        clock: Clock,
        reason: str | None = None,
        dry_run: bool = False,
        tenants: Sequence[str] | None = None,
        request: dict[str, Any] | None = None,
        batch_id: str | None = None,
    ) -> None:
        self.db, self.kind, self.actor, self.clock = db, kind, actor, clock
        self.reason, self.dry_run = reason, dry_run
        self.tenants, self.request = tenants, request or {}
        self.id = batch_id or new_batch_id()
        self.total = 0

    async def start(self, total: int) -> None:
        self.total = total
        now = self.clock()
        async with self.db.begin() as conn:
            await conn.execute(
                insert(batches).values(
                    id=self.id,
                    kind=self.kind,
                    state="running",
                    dry_run=self.dry_run,
                    actor=self.actor,
                    reason=self.reason,
                    tenant_scope=scope_key(self.tenants),
                    request=self.request,
                    total=total,
                    done=0,
                    skipped=0,
                    failed=0,
                    items=[],
                    started_at=now,
                    updated_at=now,
                )
            )

    async def _write(self, outcomes: Sequence[ItemOutcome], **values: Any) -> None:
        counts = Counts.of(outcomes, self.total)
        async with self.db.begin() as conn:
            await conn.execute(
                update(batches)
                .where(batches.c.id == self.id)
                .values(
                    total=counts.total,
                    done=counts.done,
                    skipped=counts.skipped,
                    failed=counts.failed,
                    updated_at=self.clock(),
                    **values,
                )
            )

    async def progress(self, outcomes: Sequence[ItemOutcome]) -> None:
        await self._write(outcomes)

    async def finish(self, outcomes: Sequence[ItemOutcome]) -> None:
        await self._write(
            outcomes,
            state="completed",
            items=[o.public() for o in outcomes],
            finished_at=self.clock(),
        )

    async def fail(self, outcomes: Sequence[ItemOutcome], exc: BaseException) -> None:
        await self._write(
            outcomes,
            state="failed",
            items=[o.public() for o in outcomes],
            error=f"{type(exc).__name__}: {exc}"[:2000],
            finished_at=self.clock(),
        )

    async def run(
        self,
        selection: Selection[T],
        act: Callable[[T], Awaitable[ItemOutcome]],
        *,
        key: Callable[[T], int | str],
        rate: float | None = None,
    ) -> BatchOperation:
        """Start the batch over ``selection`` (its skipped explicit keys
        count as items), run ``act`` per selected item, close the batch."""
        done: list[ItemOutcome] = list(selection.skipped)
        await self.start(len(selection.items) + len(done))

        async def progress(outcomes: list[ItemOutcome]) -> None:
            await self.progress([*done, *outcomes])

        try:
            ran = await run_items(selection.items, act, key=key, rate=rate, progress=progress)
        except BaseException as exc:
            await self.fail(done, exc)
            raise
        outcomes = [*done, *ran]
        await self.finish(outcomes)
        return BatchOperation(self.id, self.kind, outcomes, self.total)


# ------------------------------------------------------------------ reading

_SUMMARY = (
    batches.c.id,
    batches.c.kind,
    batches.c.state,
    batches.c.dry_run,
    batches.c.actor,
    batches.c.reason,
    batches.c.request,
    batches.c.total,
    batches.c.done,
    batches.c.skipped,
    batches.c.failed,
    batches.c.error,
    batches.c.started_at,
    batches.c.updated_at,
    batches.c.finished_at,
)


def _public(row: Any, *, items: bool) -> dict[str, Any]:
    m = row._mapping
    counts = Counts(m["total"], m["done"], m["skipped"], m["failed"])
    out = {
        "id": m["id"],
        "kind": m["kind"],
        "state": m["state"],
        "dryRun": bool(m["dry_run"]),
        "actor": m["actor"],
        "reason": m["reason"],
        "request": m["request"],
        "counts": counts.public(),
        "processed": counts.processed,
        "error": m["error"],
        "startedAt": m["started_at"],
        "updatedAt": m["updated_at"],
        "finishedAt": m["finished_at"],
    }
    if items:
        out["results"] = list(m["items"] or [])
    return out


def _visible(row_scope: str | None, tenants: Sequence[str] | None) -> bool:
    if tenants is None:
        return True
    if row_scope is None:
        return False
    return set(row_scope.split(",")) <= set(tenants)


async def describe(
    db: Database, batch_id: str, *, tenants: Sequence[str] | None = None
) -> dict[str, Any] | None:
    """One batch with its counts, progress and per-item results; None when
    it does not exist or the caller's tenants cannot see it."""
    async with db.read() as conn:
        row = (
            await conn.execute(
                select(*_SUMMARY, batches.c["items"], batches.c.tenant_scope).where(
                    batches.c.id == batch_id
                )
            )
        ).first()
    if row is None or not _visible(row.tenant_scope, tenants):
        return None
    return _public(row, items=True)


async def counts_of(conn: AsyncConnection, ids: Sequence[str]) -> dict[str, Counts]:
    """The counts of the recorded batches among ``ids`` (one query)."""
    if not ids:
        return {}
    c = batches.c
    rows = await conn.execute(
        select(c.id, c.total, c.done, c.skipped, c.failed).where(c.id.in_(list(ids)))
    )
    return {str(r.id): Counts(r.total, r.done, r.skipped, r.failed) for r in rows}


async def list_batches(
    db: Database,
    *,
    tenants: Sequence[str] | None = None,
    kind: str | None = None,
    limit: int = 50,
    after: tuple[datetime, str] | None = None,
) -> tuple[list[dict[str, Any]], tuple[datetime, str] | None]:
    """The newest batches first (no per-item results), and the key of the
    last one when another page may follow."""
    query = select(*_SUMMARY)
    if tenants is not None:
        query = query.where(batches.c.tenant_scope == scope_key(tenants))
    if kind is not None:
        query = query.where(batches.c.kind == kind)
    if after is not None:
        at, last = after
        query = query.where(
            or_(batches.c.started_at < at, and_(batches.c.started_at == at, batches.c.id < last))
        )
    query = query.order_by(batches.c.started_at.desc(), batches.c.id.desc()).limit(limit + 1)
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    page = rows[:limit]
    nxt = (page[-1].started_at, page[-1].id) if len(rows) > limit else None
    return [_public(r, items=False) for r in page], nxt
