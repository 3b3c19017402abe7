"""Starting instances (SPEC E-2, E-7): validate the form, freeze the
definition version into the instance, put a token on the start node and run
to the first wait state — all in one transaction."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import workflow_form_writes, workflow_instances
from flowledger.engine import runner
from flowledger.engine.deployments import get_version
from flowledger.engine.forms import validate_form
from flowledger.engine.hooks import EngineHooks
from flowledger.engine.snapshots import SnapshotCache
from flowledger.engine.step import Step
from flowledger.engine.tokens import create_token
from flowledger.states import InstanceStatus


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
    definition = await get_version(conn, key, tenant=tenant, version=version)
    defn = snapshots.get(definition["id"], definition["source"])
    data = validate_form(defn.form, form)
    instance: dict[str, Any] = {
        "tenant_id": tenant,
        "definition_id": definition["id"],
        "definition_key": key,
        "definition_version": definition["version"],
        "snapshot": definition["source"],
        "status": InstanceStatus.RUNNING,
        "form_data": data,
        "initiator": initiator,
        "parent_instance_id": parent_instance_id,
        "parent_task_id": parent_task_id,
        "trace_id": trace_id or uuid.uuid4().hex,
        "created_at": now,
        "updated_at": now,
    }
    instance["id"] = (
        await conn.execute(
            workflow_instances.insert().values(**instance).returning(workflow_instances.c.id)
        )
    ).scalar_one()
    step = Step(conn=conn, now=now, actor=initiator, instance=instance, defn=defn, hooks=hooks)
    await conn.execute(
        workflow_form_writes.insert().values(
            instance_id=step.instance_id,
            written_by=initiator,
            source="start",
            changes=data,
            created_at=now,
        )
    )
    await step.trace(
        "instance_started",
        detail={
            "definitionKey": key,
            "version": definition["version"],
            "parentInstanceId": parent_instance_id,
        },
    )
    await step.emit("instance.started", {"initiator": initiator})
    token = await create_token(step, defn.start_node().key, [])
    await runner.run(step, [token])
    return step.instance_id
