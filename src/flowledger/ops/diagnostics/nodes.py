"""The node and diagram views of an instance's diagnostics (SPEC O-10):
every node of the frozen snapshot with its run state, and the snapshot's
edges with whether each was taken — ready for the console to draw.

Run state of a node (one of ``not_reached``, ``active``, ``waiting``,
``done``, ``failed``, ``skipped``), decided in this order:

1. ``failed`` — its latest visit logged ``node_failed`` and the token did
   not leave afterwards (no error edge taken);
2. ``waiting`` — a live token is parked there (a join), or every open task
   there is a system wait (delay, subprocess, trigger: status ``waiting``);
3. ``active`` — a live token is there otherwise (a pending human task);
4. ``not_reached`` — never entered;
5. ``done`` — it was left after its latest entry (``node_left``, or
   ``token_forked`` for a fork), or it is an end node;
6. ``skipped`` — entered and never left, with no live token: its position
   was removed (force jump, batch recovery, the instance ended meanwhile).

Visit count and first/last entry come from the ``node_entered`` trace
events; the error is the latest ``node_failed`` detail. An edge is taken
when a ``node_left`` event of its source names its target (``detail.to``)
or a fork sent a branch along it (``token_forked``).

Set-based: one grouped query over the trace (``ix_workflow_trace_instance``),
one for the latest failures, one for live tokens
(``ix_workflow_tokens_instance_state``), one for open tasks
(``ix_workflow_tasks_instance``) and one for the fork decisions."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from sqlalchemy import func, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_tasks as tasks
from flowledger.db.engine_schema import workflow_tokens as tokens
from flowledger.db.engine_schema import workflow_trace as trace
from flowledger.definitions.model import ProcessDefinition
from flowledger.states import TaskStatus, TokenState

RUN_STATES = ("not_reached", "active", "waiting", "done", "failed", "skipped")
_EVENTS = ("node_entered", "node_left", "token_forked", "node_failed")


@dataclass
class _Node:
    visits: int = 0
    first_entered: datetime | None = None
    last_entered: datetime | None = None
    last_entered_id: int | None = None
    last_left_id: int | None = None
    last_failed_id: int | None = None
    error: dict[str, Any] | None = None
    live_tokens: list[int] = field(default_factory=list)
    parked: bool = False
    open_tasks: list[int] = field(default_factory=list)
    open_statuses: set[str] = field(default_factory=set)


async def _facts(conn: AsyncConnection, instance_id: int) -> dict[str, _Node]:
    facts: dict[str, _Node] = {}
    grouped = await conn.execute(
        select(
            trace.c.node_key,
            trace.c.event,
            func.count(),
            func.min(trace.c.created_at),
            func.max(trace.c.created_at),
            func.max(trace.c.id),
        )
        .where(
            trace.c.instance_id == instance_id,
            trace.c.node_key.is_not(None),
            trace.c.event.in_(_EVENTS),
        )
        .group_by(trace.c.node_key, trace.c.event)
    )
    failed_ids: list[int] = []
    for node_key, event, count, first, last, last_id in grouped.all():
        fact = facts.setdefault(node_key, _Node())
        if event == "node_entered":
            fact.visits = int(count)
            fact.first_entered = first
            fact.last_entered = last
            fact.last_entered_id = int(last_id)
        elif event in ("node_left", "token_forked"):  # a fork leaves by forking
            fact.last_left_id = max(fact.last_left_id or 0, int(last_id))
        else:
            fact.last_failed_id = int(last_id)
            failed_ids.append(int(last_id))
    if failed_ids:
        rows = await conn.execute(
            select(trace.c.node_key, trace.c.detail, trace.c.created_at).where(
                trace.c.id.in_(failed_ids)
            )
        )
        for node_key, detail, at in rows.all():
            detail = detail or {}
            facts[node_key].error = {
                "code": detail.get("code"),
                "message": detail.get("error"),
                "at": at,
            }
    live = await conn.execute(
        select(tokens.c.id, tokens.c.node_key, tokens.c.state)
        .where(tokens.c.instance_id == instance_id, tokens.c.state != TokenState.CONSUMED)
        .order_by(tokens.c.id)
    )
    for token_id, node_key, state in live.all():
        fact = facts.setdefault(node_key, _Node())
        fact.live_tokens.append(int(token_id))
        fact.parked = fact.parked or state == TokenState.PARKED
    open_rows = await conn.execute(
        select(tasks.c.id, tasks.c.node_key, tasks.c.status)
        .where(
            tasks.c.instance_id == instance_id,
            tasks.c.status.in_([TaskStatus.PENDING, TaskStatus.WAITING]),
        )
        .order_by(tasks.c.id)
    )
    for task_id, node_key, status in open_rows.all():
        fact = facts.setdefault(node_key, _Node())
        fact.open_tasks.append(int(task_id))
        fact.open_statuses.add(str(status))
    return facts


def _state(fact: _Node, node_type: str) -> str:
    entered = fact.last_entered_id
    failed = fact.last_failed_id
    left = fact.last_left_id
    if (
        failed is not None
        and entered is not None
        and failed > entered
        and (left is None or left < failed)
    ):
        return "failed"
    if fact.live_tokens:
        if fact.parked or (fact.open_statuses and fact.open_statuses <= {TaskStatus.WAITING}):
            return "waiting"
        return "active"
    if entered is None:
        return "not_reached"
    if node_type == "end" or (left is not None and left > entered):
        return "done"
    return "skipped"


async def node_states(
    conn: AsyncConnection, instance_id: int, defn: ProcessDefinition
) -> list[dict[str, Any]]:
    """Every node of ``defn`` in document order with its run state."""
    facts = await _facts(conn, instance_id)
    out = []
    for node in defn.nodes:
        fact = facts.get(node.key, _Node())
        out.append(
            {
                "key": node.key,
                "type": node.type,
                "name": node.name,
                "state": _state(fact, node.type),
                "visits": fact.visits,
                "firstEnteredAt": fact.first_entered,
                "lastEnteredAt": fact.last_entered,
                "error": fact.error,
                "tokenIds": fact.live_tokens,
                "openTaskIds": fact.open_tasks,
            }
        )
    return out


async def _taken_edges(conn: AsyncConnection, instance_id: int) -> set[tuple[str, str]]:
    target = trace.c.detail["to"].as_string()
    left = await conn.execute(
        select(trace.c.node_key, target)
        .where(trace.c.instance_id == instance_id, trace.c.event == "node_left")
        .distinct()
    )
    taken = {(str(a), str(b)) for a, b in left.all() if a is not None and b is not None}
    forks = await conn.execute(
        select(trace.c.node_key, trace.c.detail).where(
            trace.c.instance_id == instance_id, trace.c.event == "token_forked"
        )
    )
    for node_key, detail in forks.all():
        for to in (detail or {}).get("to", []):
            taken.add((str(node_key), str(to)))
    return taken


async def diagram_view(
    conn: AsyncConnection,
    instance_id: int,
    defn: ProcessDefinition,
    nodes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    """The snapshot's nodes (with run state) and edges (with ``taken``);
    ``nodes``: :func:`node_states` when the caller has read them already."""
    if nodes is None:
        nodes = await node_states(conn, instance_id, defn)
    states = {n["key"]: n for n in nodes}
    taken = await _taken_edges(conn, instance_id)
    return {
        "nodes": [
            {
                "key": node.key,
                "type": node.type,
                "name": node.name,
                "state": states[node.key]["state"],
                "visits": states[node.key]["visits"],
            }
            for node in defn.nodes
        ],
        "edges": [
            {
                "from": edge.from_,
                "to": edge.to,
                "condition": edge.condition,
                "default": edge.default,
                "on": edge.on,
                "taken": (edge.from_, edge.to) in taken,
            }
            for edge in defn.edges
        ],
    }
