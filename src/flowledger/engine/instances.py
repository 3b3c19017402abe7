"""Starting instances (SPEC E-2, E-7): validate the form, freeze the
definition version into the instance, put a token on the start node and run
to the first wait state — all in one transaction. The instance and its first
token are one statement on PostgreSQL (:mod:`flowledger.db.engine_start`),
which copies the snapshot from the version's row (it never travels through
Python); the form-write history row goes to the write buffer."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_start import insert_instance_and_start_token
from flowledger.engine import runner
from flowledger.engine.deployments import source_of, version_ref
from flowledger.engine.forms import validate_form
from flowledger.engine.hooks import EngineHooks
from flowledger.engine.snapshots import SnapshotCache
from flowledger.engine.step import Step
from flowledger.engine.tokens import Token
from flowledger.engine.write_buffer import add_form_write
from flowledger.states import InstanceStatus, TokenState


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
    start_key = defn.start_node().key
    instance["id"], token_id = await insert_instance_and_start_token(
        conn,
        instance,
        {"node_key": start_key, "state": TokenState.ACTIVE, "fork_stack": [], "created_at": now},
    )
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
    await runner.run(step, [Token(token_id, start_key, [])])
    return step.instance_id
