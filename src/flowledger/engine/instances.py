"""Starting instances (SPEC E-2, E-7): validate the form, freeze the
definition version into the instance, put a token on the start node and run
to the first wait state — all in one transaction. The snapshot is copied from
the version's row by the database (it never travels through Python); the
form-write history row goes to the write buffer."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_definitions, workflow_instances
from flowledger.engine import runner
from flowledger.engine.deployments import source_of, version_ref
from flowledger.engine.forms import validate_form
from flowledger.engine.hooks import EngineHooks
from flowledger.engine.snapshots import SnapshotCache
from flowledger.engine.step import Step
from flowledger.engine.tokens import create_token
from flowledger.engine.write_buffer import add_form_write
from flowledger.states import InstanceStatus

_INSERT = (
    workflow_instances.insert()
    .values(
        snapshot=select(workflow_definitions.c.source)
        .where(workflow_definitions.c.id == bindparam("b_definition_id"))
        .scalar_subquery()
    )
    .returning(workflow_instances.c.id)
)


async def start_instance(
    conn: AsyncConnection,
    key: str,
    *,
    form: dict[str, Any],
    initiator: str,
    tenant: str,
    now: datetime,
    snapshots: SnapshotCache,
    hooks: EngineHooks,
    version: int | None = None,
    parent_instance_id: int | None = None,
    parent_task_id: int | None = None,
    trace_id: str | None = None,
) -> int:
    definition_id, definition_version = await version_ref(conn, key, tenant=tenant, version=version)
    defn = snapshots.cached(definition_id)
    if defn is None:
        defn = snapshots.get(definition_id, await source_of(conn, definition_id))
    data = validate_form(defn.form, form)
    instance: dict[str, Any] = {
        "tenant_id": tenant,
        "definition_id": definition_id,
        "definition_key": key,
        "definition_version": definition_version,
        "status": InstanceStatus.RUNNING,
        "form_data": data,
        "initiator": initiator,
        "parent_instance_id": parent_instance_id,
        "parent_task_id": parent_task_id,
        "trace_id": trace_id or uuid.uuid4().hex,
        "created_at": now,
        "updated_at": now,
    }
    params = {**instance, "b_definition_id": definition_id}
    instance["id"] = (await conn.execute(_INSERT, params)).scalar_one()
    step = Step(conn=conn, now=now, actor=initiator, instance=instance, defn=defn, hooks=hooks)
    await add_form_write(
        conn,
        {
            "instance_id": step.instance_id,
            "written_by": initiator,
            "source": "start",
            "changes": data,
            "created_at": now,
        },
    )
    await step.trace(
        "instance_started",
        detail={
            "definitionKey": key,
            "version": definition_version,
            "parentInstanceId": parent_instance_id,
        },
    )
    await step.emit("instance.started", {"initiator": initiator})
    token = await create_token(step, defn.start_node().key, [])
    await runner.run(step, [token])
    return step.instance_id
