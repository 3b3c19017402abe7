"""Row builders for the analytics and retention tests: engine rows inserted
directly with SQLAlchemy so every time and state is exactly what a test says
(SPEC O-14, O-20). Each builder commits in its own transaction and returns
the new id."""

from __future__ import annotations

import itertools
from datetime import datetime
from typing import Any

from sqlalchemy import insert, select

from flowledger.db.database import Database
from flowledger.db.engine_schema import (
    workflow_definitions,
    workflow_event_outbox,
    workflow_instances,
    workflow_tasks,
    workflow_tokens,
    workflow_trace,
)
from flowledger.db.event_schema import workflow_event_subscriptions, workflow_subscription_hits
from tests.ops.rows import add_job

__all__ = ["add_job"]

_seq = itertools.count(1)
_definitions: dict[tuple[str, str], int] = {}


async def _one(db: Database, table: Any, values: dict[str, Any]) -> int:
    async with db.begin() as conn:
        result = await conn.execute(insert(table).values(**values))
        return int(result.inserted_primary_key[0])


async def add_definition(db: Database, key: str, tenant: str, now: datetime) -> int:
    return await _one(
        db,
        workflow_definitions,
        {
            "tenant_id": tenant,
            "key": key,
            "version": 1,
            "name": key,
            "source": {},
            "deployed_by": "dev",
            "deployed_at": now,
        },
    )


async def add_instance(
    db: Database,
    key: str,
    *,
    created_at: datetime,
    status: str = "running",
    finished_at: datetime | None = None,
    tenant: str = "default",
    parent: int | None = None,
) -> int:
    definition = _definitions.get((db.raw_url, f"{tenant}/{key}"))
    if definition is None:
        definition = await add_definition(db, key, tenant, created_at)
        _definitions[(db.raw_url, f"{tenant}/{key}")] = definition
    return await _one(
        db,
        workflow_instances,
        {
            "tenant_id": tenant,
            "definition_id": definition,
            "definition_key": key,
            "definition_version": 1,
            "snapshot": {},
            "status": status,
            "form_data": {},
            "initiator": "ann",
            "parent_instance_id": parent,
            "trace_id": f"t-{next(_seq)}",
            "created_at": created_at,
            "updated_at": finished_at or created_at,
            "finished_at": finished_at,
        },
    )


async def add_task(
    db: Database,
    instance_id: int,
    node_key: str,
    assignee: str,
    *,
    created_at: datetime,
    status: str = "pending",
    finished_at: datetime | None = None,
    due_at: datetime | None = None,
    kind: str = "approval",
    tenant: str = "default",
) -> int:
    return await _one(
        db,
        workflow_tasks,
        {
            "instance_id": instance_id,
            "tenant_id": tenant,
            # the instance's key, as the engine copies it (migration 0013)
            "definition_key": select(workflow_instances.c.definition_key)
            .where(workflow_instances.c.id == instance_id)
            .scalar_subquery(),
            "node_key": node_key,
            "kind": kind,
            "status": status,
            "assignee": assignee,
            "due_at": due_at,
            "created_at": created_at,
            "finished_at": finished_at,
        },
    )


async def add_token(db: Database, instance_id: int, *, created_at: datetime) -> int:
    return await _one(
        db,
        workflow_tokens,
        {
            "instance_id": instance_id,
            "node_key": "end",
            "state": "consumed",
            "fork_stack": [],
            "created_at": created_at,
            "consumed_at": created_at,
        },
    )


async def add_trace(db: Database, instance_id: int, *, created_at: datetime) -> int:
    return await _one(
        db,
        workflow_trace,
        {
            "instance_id": instance_id,
            "trace_id": "t",
            "event": "node.entered",
            "created_at": created_at,
        },
    )


async def add_outbox(
    db: Database,
    *,
    created_at: datetime,
    status: str = "dispatched",
    instance_id: int | None = None,
    tenant: str = "default",
) -> int:
    return await _one(
        db,
        workflow_event_outbox,
        {
            "tenant_id": tenant,
            "instance_id": instance_id,
            "event_type": "instance.started",
            "payload": {},
            "status": status,
            "trace_id": "t",
            "created_at": created_at,
            "dispatched_at": created_at if status == "dispatched" else None,
        },
    )


async def add_subscription(db: Database, now: datetime, tenant: str = "default") -> int:
    return await _one(
        db,
        workflow_event_subscriptions,
        {
            "tenant_id": tenant,
            "name": "s",
            "event_types": ["*"],
            "target_url": "http://127.0.0.1:9/hook",
            "secret_encrypted": "x",
            "enabled": True,
            "created_by": "dev",
            "created_at": now,
            "updated_at": now,
        },
    )


async def add_hit(
    db: Database,
    subscription_id: int,
    *,
    status: str,
    updated_at: datetime,
    instance_id: int | None = None,
    tenant: str = "default",
) -> int:
    return await _one(
        db,
        workflow_subscription_hits,
        {
            "subscription_id": subscription_id,
            "event_id": next(_seq),
            "event_type": "instance.started",
            "tenant_id": tenant,
            "instance_id": instance_id,
            "status": status,
            "created_at": updated_at,
            "updated_at": updated_at,
        },
    )


async def add_ticket(
    db: Database, instance_id: int, *, status: str, now: datetime, tenant: str = "default"
) -> int:
    from flowledger.db.compensation_schema import workflow_compensations

    return await _one(
        db,
        workflow_compensations,
        {
            "tenant_id": tenant,
            "instance_id": instance_id,
            "failed_node_key": "pay",
            "node_key": "pay",
            "kind": "manual",
            "status": status,
            "compensation_action_status": "none",
            "created_by": "system",
            "created_at": now,
            "updated_at": now,
        },
    )


async def add_effect(db: Database, job_id: int, *, now: datetime, step: str = "s") -> int:
    from flowledger.db.schema import workflow_job_effects

    return await _one(
        db,
        workflow_job_effects,
        {
            "operation_key": f"op-e-{next(_seq)}",
            "step_key": step,
            "job_id": job_id,
            "generation": 1,
            "created_at": now,
        },
    )
