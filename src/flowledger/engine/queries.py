"""Read-only queries over the engine's tables (instances, tasks, tokens,
comments, trace, definitions, schedules) for the REST API, the CLI and the
console. Nothing here writes, locks or moves an instance.

Scope: every query that can return rows of several tenants takes
``tenants`` — the visible tenants, or None for all (SPEC A-3); a row outside
them is simply not found.

Paging is keyset paging (DESIGN "Lists are paged with stable ordering"): a
list returns :class:`Page` with at most ``limit`` rows and the sort key of the
last row when more follow. Instances and tasks are newest first by
``(created_at, id)`` (served by the ``…_tenant_status`` indexes on
PostgreSQL); definitions by ``(key, tenant)``; schedules by id. Rows are
plain dicts with the tables' column names (snake_case); the instance's
frozen ``snapshot`` is never part of a list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Select, and_, false, func, or_, select, true
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import (
    workflow_comments,
    workflow_definitions,
    workflow_instances,
    workflow_schedules,
    workflow_tasks,
    workflow_tokens,
    workflow_trace,
)
from flowledger.states import TaskStatus

Tenants = Sequence[str] | None


@dataclass(frozen=True)
class Page:
    items: list[dict[str, Any]]
    next_key: tuple[Any, ...] | None


def _tenant_filter(column: Any, tenants: Tenants) -> ColumnElement[bool]:
    if tenants is None:
        return true()
    if not tenants:
        return false()
    return column.in_(list(tenants))  # type: ignore[no-any-return]


def _before(created: Any, ident: Any, key: tuple[Any, ...] | None) -> ColumnElement[bool]:
    """Rows after ``key`` in ``(created_at, id)`` descending order."""
    if key is None:
        return true()
    at, last_id = key
    return or_(created < at, and_(created == at, ident < last_id))


async def _page(conn: AsyncConnection, query: Select[Any], limit: int, key_of: Any) -> Page:
    rows = [dict(r) for r in (await conn.execute(query.limit(limit + 1))).mappings().all()]
    if len(rows) <= limit:
        return Page(rows, None)
    rows = rows[:limit]
    return Page(rows, key_of(rows[-1]))


# ------------------------------------------------------------------ instances

_INSTANCE_COLUMNS = [c for c in workflow_instances.c if c.name != "snapshot"]


async def list_instances(
    conn: AsyncConnection,
    *,
    tenants: Tenants,
    status: str | None = None,
    definition_key: str | None = None,
    initiator: str | None = None,
    created_from: datetime | None = None,
    created_to: datetime | None = None,
    limit: int = 50,
    after: tuple[datetime, int] | None = None,
) -> Page:
    """Instances newest first; ``created_from`` inclusive, ``created_to`` exclusive."""
    i = workflow_instances.c
    query = select(*_INSTANCE_COLUMNS).where(
        _tenant_filter(i.tenant_id, tenants), _before(i.created_at, i.id, after)
    )
    if status is not None:
        query = query.where(i.status == status)
    if definition_key is not None:
        query = query.where(i.definition_key == definition_key)
    if initiator is not None:
        query = query.where(i.initiator == initiator)
    if created_from is not None:
        query = query.where(i.created_at >= created_from)
    if created_to is not None:
        query = query.where(i.created_at < created_to)
    query = query.order_by(i.created_at.desc(), i.id.desc())
    return await _page(conn, query, limit, lambda r: (r["created_at"], r["id"]))


async def get_instance(
    conn: AsyncConnection, instance_id: int, *, tenants: Tenants = None
) -> dict[str, Any] | None:
    i = workflow_instances.c
    row = (
        (
            await conn.execute(
                select(*_INSTANCE_COLUMNS).where(
                    i.id == instance_id, _tenant_filter(i.tenant_id, tenants)
                )
            )
        )
        .mappings()
        .first()
    )
    return None if row is None else dict(row)


async def _rows(conn: AsyncConnection, query: Select[Any]) -> list[dict[str, Any]]:
    return [dict(r) for r in (await conn.execute(query)).mappings().all()]


async def instance_detail(
    conn: AsyncConnection, instance_id: int, *, tenants: Tenants = None, trace_limit: int = 500
) -> dict[str, Any] | None:
    """The instance with its tasks, tokens and comments (in creation order) and
    the latest ``trace_limit`` engine trace entries (oldest first)."""
    instance = await get_instance(conn, instance_id, tenants=tenants)
    if instance is None:
        return None
    instance["tasks"] = await _rows(
        conn,
        _task_select()
        .where(workflow_tasks.c.instance_id == instance_id)
        .order_by(workflow_tasks.c.id),
    )
    instance["tokens"] = await _rows(
        conn,
        select(workflow_tokens)
        .where(workflow_tokens.c.instance_id == instance_id)
        .order_by(workflow_tokens.c.id),
    )
    instance["comments"] = await _rows(
        conn,
        select(workflow_comments)
        .where(workflow_comments.c.instance_id == instance_id)
        .order_by(workflow_comments.c.id),
    )
    trace = await _rows(
        conn,
        select(workflow_trace)
        .where(workflow_trace.c.instance_id == instance_id)
        .order_by(workflow_trace.c.id.desc())
        .limit(trace_limit),
    )
    instance["trace"] = trace[::-1]
    return instance


# ---------------------------------------------------------------------- tasks


def _task_select() -> Select[Any]:
    """Task columns plus the instance's definition key, initiator and status."""
    i = workflow_instances.c
    return select(
        workflow_tasks,
        i.definition_key,
        i.initiator,
        i.status.label("instance_status"),
    ).select_from(workflow_tasks.join(workflow_instances, i.id == workflow_tasks.c.instance_id))


async def list_tasks(
    conn: AsyncConnection,
    *,
    tenants: Tenants,
    assignee: str | None = None,
    status: str | None = None,
    instance_id: int | None = None,
    limit: int = 50,
    after: tuple[datetime, int] | None = None,
) -> Page:
    """Tasks newest first."""
    t = workflow_tasks.c
    query = _task_select().where(
        _tenant_filter(t.tenant_id, tenants), _before(t.created_at, t.id, after)
    )
    if assignee is not None:
        query = query.where(t.assignee == assignee)
    if status is not None:
        query = query.where(t.status == status)
    if instance_id is not None:
        query = query.where(t.instance_id == instance_id)
    query = query.order_by(t.created_at.desc(), t.id.desc())
    return await _page(conn, query, limit, lambda r: (r["created_at"], r["id"]))


async def get_task(
    conn: AsyncConnection, task_id: int, *, tenants: Tenants = None
) -> dict[str, Any] | None:
    t = workflow_tasks.c
    row = (
        (
            await conn.execute(
                _task_select().where(t.id == task_id, _tenant_filter(t.tenant_id, tenants))
            )
        )
        .mappings()
        .first()
    )
    return None if row is None else dict(row)


async def has_task_for(conn: AsyncConnection, instance_id: int, user: str) -> bool:
    """Whether ``user`` holds (or held) any task of the instance."""
    t = workflow_tasks.c
    found = (
        await conn.execute(
            select(t.id).where(t.instance_id == instance_id, t.assignee == user).limit(1)
        )
    ).first()
    return found is not None


async def pending_task_at_node(
    conn: AsyncConnection, *, instance_id: int, node_key: str, assignee: str
) -> int | None:
    """The id of a pending task ``assignee`` holds at ``node_key`` (SPEC O-5)."""
    t = workflow_tasks.c
    found = (
        await conn.execute(
            select(t.id)
            .where(
                t.instance_id == instance_id,
                t.node_key == node_key,
                t.assignee == assignee,
                t.status == TaskStatus.PENDING,
            )
            .order_by(t.id)
            .limit(1)
        )
    ).scalar_one_or_none()
    return None if found is None else int(found)


# ---------------------------------------------------------------- definitions

_DEFINITION_COLUMNS = [c for c in workflow_definitions.c if c.name != "source"]


async def list_definitions(
    conn: AsyncConnection,
    *,
    tenants: Tenants,
    limit: int = 50,
    after: tuple[str, str] | None = None,
) -> Page:
    """The latest version of every definition key, by key then tenant."""
    d = workflow_definitions.c
    latest = (
        select(d.tenant_id, d.key, func.max(d.version).label("version"))
        .where(_tenant_filter(d.tenant_id, tenants))
        .group_by(d.tenant_id, d.key)
        .subquery()
    )
    query = select(*_DEFINITION_COLUMNS).join(
        latest,
        and_(
            d.tenant_id == latest.c.tenant_id,
            d.key == latest.c.key,
            d.version == latest.c.version,
        ),
    )
    if after is not None:
        key, tenant = after
        query = query.where(or_(d.key > key, and_(d.key == key, d.tenant_id > tenant)))
    query = query.order_by(d.key, d.tenant_id)
    return await _page(conn, query, limit, lambda r: (r["key"], r["tenant_id"]))


async def list_definition_versions(
    conn: AsyncConnection, key: str, *, tenant: str
) -> list[dict[str, Any]]:
    """Every version of ``key`` in ``tenant``, newest first (without sources)."""
    d = workflow_definitions.c
    return await _rows(
        conn,
        select(*_DEFINITION_COLUMNS)
        .where(d.tenant_id == tenant, d.key == key)
        .order_by(d.version.desc()),
    )


async def get_definition_version(
    conn: AsyncConnection, key: str, version: int, *, tenant: str
) -> dict[str, Any] | None:
    """One version with its source document."""
    d = workflow_definitions.c
    row = (
        (
            await conn.execute(
                select(workflow_definitions).where(
                    d.tenant_id == tenant, d.key == key, d.version == version
                )
            )
        )
        .mappings()
        .first()
    )
    return None if row is None else dict(row)


# ------------------------------------------------------------------ schedules


async def list_schedules(
    conn: AsyncConnection,
    *,
    tenants: Tenants,
    definition_key: str | None = None,
    limit: int = 50,
    after: tuple[int] | None = None,
) -> Page:
    """Schedules newest first."""
    s = workflow_schedules.c
    query = select(workflow_schedules).where(_tenant_filter(s.tenant_id, tenants))
    if definition_key is not None:
        query = query.where(s.definition_key == definition_key)
    if after is not None:
        query = query.where(s.id < after[0])
    query = query.order_by(s.id.desc())
    return await _page(conn, query, limit, lambda r: (r["id"],))


async def get_schedule(
    conn: AsyncConnection, schedule_id: int, *, tenants: Tenants = None
) -> dict[str, Any] | None:
    s = workflow_schedules.c
    row = (
        (
            await conn.execute(
                select(workflow_schedules).where(
                    s.id == schedule_id, _tenant_filter(s.tenant_id, tenants)
                )
            )
        )
        .mappings()
        .first()
    )
    return None if row is None else dict(row)


# ------------------------------------------------------------------- comments


async def get_comment(conn: AsyncConnection, comment_id: int) -> dict[str, Any] | None:
    row = (
        (await conn.execute(select(workflow_comments).where(workflow_comments.c.id == comment_id)))
        .mappings()
        .first()
    )
    return None if row is None else dict(row)
