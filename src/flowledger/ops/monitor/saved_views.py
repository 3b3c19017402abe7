"""Saved views (SPEC O-1): a named filter set of one user for one scope
(``instances``, ``jobs``, ``tasks``, ``health``), private or shared with its
tenant, and at most one default view per user and scope.

Visibility: a user sees their own views and the shared views of the tenants
they can see; anything else is not found (another user's private view is
404, exactly like a missing one). Only the owner changes or deletes a view.

Default: making a view the default clears the owner's previous default of
that scope in the same transaction; the partial unique index
``uq_workflow_saved_views_default`` (owner, scope) WHERE is_default makes two
concurrent "make default" requests serialize — the loser's write is
retried (in a savepoint of its transaction) once it sees the winner's row,
so the last one wins and there is never more than one default.

Audit (SPEC A-2): a change given the caller's ``audit`` entry commits with
its ``ok`` row (:func:`flowledger.access.audit.change_transaction`): one row
for the whole attempt, retries included.

The filters are stored as given after validation by the API
(:mod:`flowledger.api.view_filters`); this module never interprets them."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, and_, false, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.access.audit import AuditEntry, change_transaction
from flowledger.db.database import Database
from flowledger.db.monitor_schema import workflow_saved_views as v
from flowledger.errors import ConflictError, FlowledgerError, NotFoundError

RETRIES = 3


class ViewNotFound(NotFoundError):
    code = "view_not_found"


class NotViewOwner(FlowledgerError):
    """A visible (shared) view of someone else: only its owner changes it
    (the API answers 403)."""

    code = "forbidden"


def _visible(user: str, tenants: Sequence[str] | None) -> Any:
    shared: ColumnElement[bool] = v.c.shared.is_(True)
    if tenants is not None:
        shared = and_(shared, v.c.tenant_id.in_(list(tenants)) if tenants else false())
    return or_(v.c.owner == user, shared)


async def _lock_owner(conn: AsyncConnection, owner: str) -> None:
    """Lock every view of ``owner`` in id order, before any other lock of the
    transaction: two concurrent "make this my default" then run one after the
    other on PostgreSQL (SQLite has one writer) instead of colliding on the
    unique default index."""
    await conn.execute(select(v.c.id).where(v.c.owner == owner).order_by(v.c.id).with_for_update())


async def _clear_default(conn: AsyncConnection, owner: str, scope: str, keep: int | None) -> None:
    query = update(v).where(v.c.owner == owner, v.c.scope == scope, v.c.is_default.is_(True))
    if keep is not None:
        query = query.where(v.c.id != keep)
    await conn.execute(query.values(is_default=False))


async def _row(conn: AsyncConnection, view_id: int) -> dict[str, Any] | None:
    row = (await conn.execute(select(v).where(v.c.id == view_id))).mappings().first()
    return None if row is None else dict(row)


async def create_view(
    db: Database,
    *,
    tenant: str,
    owner: str,
    scope: str,
    name: str,
    filters: dict[str, Any],
    shared: bool,
    is_default: bool,
    now: datetime,
    audit: AuditEntry | None = None,
) -> dict[str, Any]:
    async def insert(conn: AsyncConnection) -> dict[str, Any]:
        if is_default:
            await _lock_owner(conn, owner)
            await _clear_default(conn, owner, scope, None)
        result = await conn.execute(
            v.insert()
            .values(
                tenant_id=tenant,
                owner=owner,
                scope=scope,
                name=name,
                filters=filters,
                shared=shared,
                is_default=is_default,
                created_at=now,
                updated_at=now,
            )
            .returning(v.c.id)
        )
        row = await _row(conn, int(result.scalar_one()))
        assert row is not None
        return row

    async with change_transaction(db, audit, lambda: now) as conn:
        row = await _retried(conn, insert)
        if audit is not None:
            audit.target_id = str(row["id"])
        return row


async def _retried(
    conn: AsyncConnection, write: Callable[[AsyncConnection], Awaitable[dict[str, Any]]]
) -> dict[str, Any]:
    """``write`` on ``conn`` in a savepoint, again after a concurrent default took the
    unique index (up to :data:`RETRIES` times)."""
    for attempt in range(RETRIES):
        try:
            async with conn.begin_nested():
                return await write(conn)
        except IntegrityError:
            if attempt == RETRIES - 1:
                raise ConflictError("another default view was set at the same time") from None
    raise AssertionError("unreachable")  # pragma: no cover


async def list_views(
    db: Database, *, user: str, tenants: Sequence[str] | None, scopes: Sequence[str]
) -> list[dict[str, Any]]:
    """The caller's own and shared views of ``scopes``: own first, then by name."""
    async with db.read() as conn:
        query = (
            select(v)
            .where(_visible(user, tenants), v.c.scope.in_(list(scopes)))
            .order_by(v.c.scope, (v.c.owner != user), v.c.name, v.c.id)
        )
        return [dict(r) for r in (await conn.execute(query)).mappings().all()]


async def get_view(
    db: Database, view_id: int, *, user: str, tenants: Sequence[str] | None
) -> dict[str, Any]:
    async with db.read() as conn:
        row = (
            (await conn.execute(select(v).where(v.c.id == view_id, _visible(user, tenants))))
            .mappings()
            .first()
        )
    if row is None:
        raise ViewNotFound(f"view {view_id} not found", field="viewId")
    return dict(row)


async def update_view(
    db: Database,
    view_id: int,
    *,
    user: str,
    tenants: Sequence[str] | None,
    changes: dict[str, Any],
    now: datetime,
    audit: AuditEntry | None = None,
) -> dict[str, Any]:
    """Apply ``changes`` (name, filters, shared, is_default) to the owner's view."""

    async def write(conn: AsyncConnection) -> dict[str, Any]:
        if changes.get("is_default"):
            await _lock_owner(conn, user)
        row = (
            (
                await conn.execute(
                    select(v).where(v.c.id == view_id, _visible(user, tenants)).with_for_update()
                )
            )
            .mappings()
            .first()
        )
        if row is None:
            raise ViewNotFound(f"view {view_id} not found", field="viewId")
        if row["owner"] != user:
            raise NotViewOwner(f"view {view_id} belongs to {row['owner']}")
        if changes.get("is_default"):
            await _clear_default(conn, user, row["scope"], view_id)
        await conn.execute(update(v).where(v.c.id == view_id).values(**changes, updated_at=now))
        updated = await _row(conn, view_id)
        assert updated is not None
        return updated

    async with change_transaction(db, audit, lambda: now) as conn:
        return await _retried(conn, write)


async def delete_view(
    db: Database,
    view_id: int,
    *,
    user: str,
    tenants: Sequence[str] | None,
    now: datetime,
    audit: AuditEntry | None = None,
) -> dict[str, Any]:
    async with change_transaction(db, audit, lambda: now) as conn:
        row = (
            (await conn.execute(select(v).where(v.c.id == view_id, _visible(user, tenants))))
            .mappings()
            .first()
        )
        if row is None:
            raise ViewNotFound(f"view {view_id} not found", field="viewId")
        if row["owner"] != user:
            raise NotViewOwner(f"view {view_id} belongs to {row['owner']}")
        await conn.execute(v.delete().where(v.c.id == view_id))
        if audit is not None:
            audit.tenant_id = row["tenant_id"]
    return dict(row)
