"""Starting instances (SPEC E-2, E-7): validate the form, freeze the
definition version into the instance, put a token on the start node and run
to the first wait state — all in one transaction. The instance and its first
token are one statement on PostgreSQL (:mod:`flowledger.db.engine_start`),
which copies the snapshot from the version's row (it never travels through
Python); the form-write history row goes to the write buffer. A start of
the latest version starts from the version the engine's snapshot cache
remembers as the latest, and the insert checks it still is (on PostgreSQL
no read before the insert); a form the remembered version refuses, or a
newer version deployed since, sends the start through a fresh read of the
latest version."""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import Any

from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_start import insert_instance_and_start_token
from flowledger.engine import runner
from flowledger.engine.deployments import source_of, version_ref
from flowledger.engine.errors import FormInvalidError
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
    # the latest version: the one remembered, if any, checked by the insert
    remembered = snapshots.latest(tenant, key) if version is None else None
    if remembered is None:
        definition_id, definition_version = await version_ref(
            conn, key, tenant=tenant, version=version
        )
    else:
        definition_id, definition_version = remembered
    defn = snapshots.cached(definition_id)
    if defn is None:
        defn = snapshots.get(definition_id, await source_of(conn, definition_id))
    if version is None:
        snapshots.remember_latest(tenant, key, (definition_id, definition_version))
    try:
        data = validate_form(defn.form, form)
    except FormInvalidError:
        if remembered is None:
            raise
        data = None  # refused by the remembered version: the latest decides
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
    token = {"node_key": start_key, "state": TokenState.ACTIVE, "fork_stack": [], "created_at": now}
    inserted = None
    if data is not None:
        inserted = await insert_instance_and_start_token(
            conn, instance, token, latest_of=version is None
        )
    if inserted is None:  # a newer version was deployed since it was remembered
        assert version is None
        snapshots.remember_latest(tenant, key, None)
        return await start_instance(
            conn,
            key,
            form=form,
            initiator=initiator,
            tenant=tenant,
            now=now,
            snapshots=snapshots,
            hooks=hooks,
            parent_instance_id=parent_instance_id,
            parent_task_id=parent_task_id,
            trace_id=trace_id,
        )
    instance["id"], token_id = inserted
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
