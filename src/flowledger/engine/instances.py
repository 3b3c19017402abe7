"""Starting instances (SPEC E-2, E-7): validate the form, freeze the
definition version into the instance, put a token on the start node and run
to the first wait state — all in one transaction. The instance and its first
token are one statement on PostgreSQL (:mod:`flowledger.engine.store.start`),
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

from flowledger.engine import runner
from flowledger.engine.deployments import source_of, version_ref
from flowledger.engine.errors import FormInvalidError
from flowledger.engine.forms import validate_form
from flowledger.engine.hooks import EngineHooks
from flowledger.engine.snapshots import SnapshotCache
from flowledger.engine.step import Step
from flowledger.engine.store.protocol import EngineStore
from flowledger.engine.tokens import Token
from flowledger.engine.write_buffer import add_form_write
from flowledger.states import InstanceStatus, TokenState
from flowledger.telemetry import current_trace_id


async def start_instance(
    conn: AsyncConnection,
    key: str,
    *,
    form: dict[str, Any],
    initiator: str,
    tenant: str,
    now: datetime,
    snapshots: SnapshotCache,
    hooks: EngineHooks[Step],
    store: EngineStore,
    version: int | None = None,
    parent_instance_id: int | None = None,
    parent_task_id: int | None = None,
    trace_id: str | None = None,
) -> int:
    # traced, an instance started in a span's trace is in that trace (issue 33)
    trace_id = trace_id or current_trace_id() or uuid.uuid4().hex
    while True:  # again only when a newer version was deployed since it was remembered
        remembered = snapshots.latest(tenant, key) if version is None else None
        ref = remembered or await version_ref(conn, key, tenant=tenant, version=version)
        defn = snapshots.cached(ref[0])
        if defn is None:
            defn = snapshots.get(ref[0], await source_of(conn, ref[0]))
        if version is None:
            snapshots.remember_latest(tenant, key, ref)
        try:
            data = validate_form(defn.form, form)
        except FormInvalidError:
            if remembered is None:
                raise
            snapshots.remember_latest(tenant, key, None)  # the latest decides
            continue
        instance: dict[str, Any] = {
            "tenant_id": tenant,
            "definition_id": ref[0],
            "definition_key": key,
            "definition_version": ref[1],
            "status": InstanceStatus.RUNNING,
            "form_data": data,
            "initiator": initiator,
            "parent_instance_id": parent_instance_id,
            "parent_task_id": parent_task_id,
            "trace_id": trace_id,
            "created_at": now,
            "updated_at": now,
        }
        start_key = defn.start_node().key
        token = {
            "node_key": start_key,
            "state": TokenState.ACTIVE,
            "fork_stack": [],
            "created_at": now,
        }
        inserted = await store.instance_insert(conn, instance, token, latest_of=version is None)
        if inserted is not None:
            break
        snapshots.remember_latest(tenant, key, None)
    instance["id"], token_id, reserved = inserted
    step = Step(
        conn=conn,
        now=now,
        actor=initiator,
        instance=instance,
        defn=defn,
        hooks=hooks,
        store=store,
        reserved=reserved,
    ).opened()
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
            "version": ref[1],
            "parentInstanceId": parent_instance_id,
        },
    )
    await step.emit("instance.started", {"initiator": initiator})
    await runner.run(step, [Token(token_id, start_key, [])])
    return step.instance_id
