"""The runtime diagnostics document of one instance (SPEC O-3, O-10, O-12):
every view in one read transaction, or one view alone.

Views (the names of ``?view=``):

==============  ============================================================
``trace``       engine trace rows, paged (cursor + limit), the operators'
                interventions among them (``kind``; ``trace_kind`` keeps
                one kind), and the job chain of the instance's traceId
                (:mod:`.trace`)
``nodes``       every snapshot node with its run state (:mod:`.nodes`)
``tasks``       every task; cc tasks marked (:mod:`.tasks`)
``triggers``    trigger / external dispatch jobs with their attempts
                (:mod:`.jobs`)
``events``      outbox rows, dispatch job, hits and deliveries (:mod:`.jobs`)
``tokens``      every token and every open join's arrived / awaited branches
                (:mod:`.tokens`)
``diagram``     snapshot nodes and edges with run state and ``taken``
``form``        form data and its write history
``definition``  the frozen snapshot
==============  ============================================================

The full document adds ``conclusions`` and ``verdict`` from
:func:`flowledger.ops.diagnostics.consistency.instance_findings`. Read-only;
an instance outside ``tenants`` is
:class:`~flowledger.engine.errors.InstanceNotFound`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_instances as instances
from flowledger.definitions.model import ProcessDefinition
from flowledger.engine.errors import InstanceNotFound
from flowledger.ops.diagnostics import consistency
from flowledger.ops.diagnostics.jobs import events_view, triggers_view
from flowledger.ops.diagnostics.nodes import diagram_view, node_states
from flowledger.ops.diagnostics.tasks import definition_view, form_view, tasks_view
from flowledger.ops.diagnostics.tokens import tokens_view
from flowledger.ops.diagnostics.trace import DEFAULT_TRACE_LIMIT, trace_view

VIEWS = (
    "trace",
    "nodes",
    "tasks",
    "triggers",
    "events",
    "tokens",
    "diagram",
    "form",
    "definition",
)


async def load_instance(
    conn: AsyncConnection, instance_id: int, *, tenants: Sequence[str] | None
) -> dict[str, Any]:
    """The instance row (snapshot included) within ``tenants``, or InstanceNotFound."""
    query = select(instances).where(instances.c.id == instance_id)
    if tenants is not None:
        query = query.where(instances.c.tenant_id.in_(list(tenants)))
    row = (await conn.execute(query)).mappings().first()
    if row is None:
        raise InstanceNotFound(f"instance {instance_id} not found", field="instanceId")
    return dict(row)


def instance_header(instance: dict[str, Any]) -> dict[str, Any]:
    return {
        "id": int(instance["id"]),
        "tenant": instance["tenant_id"],
        "definitionKey": instance["definition_key"],
        "definitionVersion": instance["definition_version"],
        "status": instance["status"],
        "initiator": instance["initiator"],
        "parentInstanceId": instance["parent_instance_id"],
        "parentTaskId": instance["parent_task_id"],
        "traceId": instance["trace_id"],
        "error": instance["error"],
        "createdAt": instance["created_at"],
        "updatedAt": instance["updated_at"],
        "finishedAt": instance["finished_at"],
    }


async def _view(
    conn: AsyncConnection,
    name: str,
    instance: dict[str, Any],
    defn: ProcessDefinition,
    *,
    now: datetime,
    trace_limit: int,
    trace_cursor: str | None,
    trace_kind: str | None = None,
    nodes: list[dict[str, Any]] | None = None,
) -> Any:
    """View ``name``; ``nodes``: the nodes view when already read (the
    diagram is drawn from it)."""
    instance_id = int(instance["id"])
    if name == "trace":
        return await trace_view(
            conn, instance, limit=trace_limit, cursor=trace_cursor, kind=trace_kind
        )
    if name == "nodes":
        return await node_states(conn, instance_id, defn)
    if name == "tasks":
        return await tasks_view(conn, instance_id, now=now)
    if name == "triggers":
        return await triggers_view(conn, instance_id)
    if name == "events":
        return await events_view(conn, instance_id, instance_created_at=instance["created_at"])
    if name == "tokens":
        return await tokens_view(conn, instance_id, defn)
    if name == "diagram":
        return await diagram_view(conn, instance_id, defn, nodes)
    if name == "form":
        return await form_view(conn, instance)
    if name == "definition":
        return definition_view(instance)
    raise ValueError(f"unknown view {name!r}")  # pragma: no cover - the API validates


async def instance_diagnostics(
    conn: AsyncConnection,
    instance_id: int,
    *,
    tenants: Sequence[str] | None,
    now: datetime,
    view: str | None = None,
    trace_limit: int = DEFAULT_TRACE_LIMIT,
    trace_cursor: str | None = None,
    trace_kind: str | None = None,
    threshold: timedelta = consistency.DEFAULT_THRESHOLD,
) -> dict[str, Any]:
    """The whole document (``view=None``) or ``{"instance", "view", <view>}``;
    the conclusions are the health inspection's rules at ``threshold``."""
    instance = await load_instance(conn, instance_id, tenants=tenants)
    defn = ProcessDefinition.model_validate(instance["snapshot"])
    names = VIEWS if view is None else (view,)
    doc: dict[str, Any] = {
        "kind": "flowledger.instance-diagnostics",
        "generatedAt": now,
        "instance": instance_header(instance),
    }
    if view is not None:
        doc["view"] = view
    for name in names:
        doc[name] = await _view(
            conn,
            name,
            instance,
            defn,
            now=now,
            trace_limit=trace_limit,
            trace_cursor=trace_cursor,
            trace_kind=trace_kind,
            nodes=doc.get("nodes"),
        )
    if view is None:
        findings = await consistency.instance_findings(
            conn, instance_id, now=now, threshold=threshold
        )
        doc.update(findings.to_public())
    return doc
