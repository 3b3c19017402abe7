"""Read models of instance monitoring (SPEC O-1, O-2): the instance list
under :class:`~flowledger.ops.monitor.filters.InstanceFilter` with a sort
(created / updated / finished, newest first) and keyset paging, the counts
per status for a filter (exact, or the planner's estimate marked as such
where an exact count would read millions of rows), the number of matches,
the rows of an export read in keyset batches (constant memory), and the
current position (nodes with an active or parked token, assignees of
pending tasks) of a set of instances in two set-based queries.

Every function is read-only; rows are plain dicts with the table's column
names and never the frozen ``snapshot``.

Indexes: the default sort is served by ``ix_workflow_instances_created_id``
(``…_tenant_created`` under a tenant scope), the others by
``ix_workflow_instances_updated`` and ``ix_workflow_instances_finished_id``;
see :mod:`flowledger.ops.monitor.filters` for the filters.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterable
from datetime import datetime
from typing import Any, Literal

from sqlalchemy import Select, and_, func, or_, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.aggregates import distinct_json_keys
from flowledger.db.count_estimates import GroupCounts, counts_by
from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_instances, workflow_tasks, workflow_tokens
from flowledger.engine.deadlines import DEADLINE_STATES, task_flags
from flowledger.ops.monitor.filters import InstanceFilter
from flowledger.states import InstanceStatus, TaskStatus, TokenState

Sort = Literal["created", "updated", "finished"]
SORTS: tuple[Sort, ...] = ("created", "updated", "finished")

i = workflow_instances.c
COLUMNS = [c for c in workflow_instances.c if c.name != "snapshot"]
_SORT_COLUMN = {"created": i.created_at, "updated": i.updated_at, "finished": i.finished_at}


def _sorted(query: Select[Any], sort: Sort, after: tuple[datetime, int] | None) -> Select[Any]:
    column = _SORT_COLUMN[sort]
    if sort == "finished":
        query = query.where(column.is_not(None))
    if after is not None:
        at, last_id = after
        query = query.where(or_(column < at, and_(column == at, i.id < last_id)))
    return query.order_by(column.desc(), i.id.desc())


def _key(row: dict[str, Any], sort: Sort) -> tuple[datetime, int]:
    return (row[f"{sort}_at"], row["id"])


async def list_instances(
    conn: AsyncConnection,
    flt: InstanceFilter,
    *,
    now: datetime,
    sort: Sort = "created",
    limit: int = 50,
    after: tuple[datetime, int] | None = None,
) -> tuple[list[dict[str, Any]], tuple[datetime, int] | None]:
    """One page newest first by ``sort`` and the key to continue after (None:
    the last page). Sorting by ``finished`` lists only finished instances."""
    query = _sorted(flt.apply(select(*COLUMNS), now), sort, after)
    rows = [dict(r) for r in (await conn.execute(query.limit(limit + 1))).mappings().all()]
    if len(rows) <= limit:
        return rows, None
    rows = rows[:limit]
    return rows, _key(rows[-1], sort)


async def status_counts(
    conn: AsyncConnection, flt: InstanceFilter, *, now: datetime
) -> GroupCounts:
    """How many instances match ``flt`` in each status (every status present,
    zeros included): exact where counting is cheap, the planner's estimate
    (named in ``estimated``) where it would read millions of rows
    (:func:`flowledger.db.count_estimates.counts_by`)."""
    rows = flt.apply(select(i.id), now)
    return await counts_by(conn, rows, i.status, [s.value for s in InstanceStatus])


async def count(conn: AsyncConnection, flt: InstanceFilter, *, now: datetime) -> int:
    query = flt.apply(select(func.count()).select_from(workflow_instances), now)
    return int((await conn.execute(query)).scalar_one())


async def form_keys(
    conn: AsyncConnection,
    flt: InstanceFilter,
    *,
    now: datetime,
    sort: Sort,
    max_rows: int,
    limit: int,
) -> list[str]:
    """The distinct top-level form keys of the first ``max_rows`` rows of the
    list (sorted, at most ``limit``), in one query."""
    rows = _sorted(flt.apply(select(i.form_data), now), sort, None)
    return await distinct_json_keys(conn, rows.limit(max_rows).subquery().c.form_data, limit=limit)


async def current_positions(
    conn: AsyncConnection, instance_ids: Iterable[int]
) -> dict[int, dict[str, list[str]]]:
    """Per instance: ``nodes`` holding an active or parked token and
    ``assignees`` of pending tasks (sorted, distinct). Two queries in all."""
    ids = list(instance_ids)
    out: dict[int, dict[str, list[str]]] = {n: {"nodes": [], "assignees": []} for n in ids}
    if not ids:
        return out
    t, k = workflow_tokens.c, workflow_tasks.c
    tokens = (
        select(t.instance_id, t.node_key)
        .distinct()
        .where(
            t.instance_id.in_(ids), t.state.in_([TokenState.ACTIVE.value, TokenState.PARKED.value])
        )
    )
    for instance_id, node in (await conn.execute(tokens)).all():
        out[int(instance_id)]["nodes"].append(str(node))
    tasks = (
        select(k.instance_id, k.assignee)
        .distinct()
        .where(k.instance_id.in_(ids), k.status == TaskStatus.PENDING.value)
    )
    for instance_id, assignee in (await conn.execute(tasks)).all():
        out[int(instance_id)]["assignees"].append(str(assignee))
    for value in out.values():
        value["nodes"].sort()
        value["assignees"].sort()
    return out


async def deadline_states(
    conn: AsyncConnection, instance_ids: Iterable[int], *, now: datetime
) -> dict[int, list[str]]:
    """Per instance: the deadline states of its pending tasks (``overdue``,
    ``due_soon``, ``escalated``, in that order; issue 31 item 4). One query."""
    ids = list(instance_ids)
    out: dict[int, list[str]] = {n: [] for n in ids}
    if not ids:
        return out
    k = workflow_tasks.c
    query = select(k.instance_id, k.status, k.due_at, k.escalated_at).where(
        k.instance_id.in_(ids),
        k.status == TaskStatus.PENDING.value,
        or_(k.due_at.is_not(None), k.escalated_at.is_not(None)),
    )
    found: dict[int, set[str]] = {n: set() for n in ids}
    for row in (await conn.execute(query)).all():
        soon, overdue = task_flags(row.status, row.due_at, now)
        states = found[int(row.instance_id)]
        states.update(
            name
            for name, on in (
                ("overdue", overdue),
                ("due_soon", soon),
                ("escalated", row.escalated_at is not None),
            )
            if on
        )
    for n, states in found.items():
        out[n] = [s for s in DEADLINE_STATES if s in states]
    return out


async def export_batches(
    db: Database,
    flt: InstanceFilter,
    *,
    now: datetime,
    sort: Sort = "created",
    max_rows: int,
    batch: int = 1000,
    positions: bool = True,
) -> AsyncIterator[list[dict[str, Any]]]:
    """The first ``max_rows`` matching rows, in list order, ``batch`` at a time,
    each batch read in its own short read transaction, with the rows'
    ``current_nodes`` and ``current_assignees`` unless ``positions`` is
    false. Constant memory: no more than one batch is held."""
    with_positions = positions
    after: tuple[datetime, int] | None = None
    left = max_rows
    while left > 0:
        async with db.read() as conn:
            rows, after = await list_instances(
                conn,
                flt,
                now=now,
                sort=sort,
                limit=min(batch, left),
                after=after,
            )
            where = await current_positions(conn, [r["id"] for r in rows]) if with_positions else {}
        for row in rows:
            if with_positions:
                row["current_nodes"] = where[row["id"]]["nodes"]
                row["current_assignees"] = where[row["id"]]["assignees"]
        if rows:
            yield rows
        left -= len(rows)
        if after is None:
            return
