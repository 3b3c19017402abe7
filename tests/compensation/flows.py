"""Flows for the compensation tests: a parent whose ``sub`` node (a
subprocess) fails because its child is rejected — the token stays active at
``sub`` with the error on the instance — and helpers that open a repair
ticket there (as the failure policies do, inside an engine step) and read
tickets, history rows and audit rows back."""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.compensation.actions import enqueue_action
from flowledger.compensation.repair import open_repair
from flowledger.db.compensation_schema import workflow_compensation_logs, workflow_compensations
from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit, workflow_form_writes
from flowledger.engine import Engine
from flowledger.engine.tokens import live_tokens
from tests.integration.engine_helpers import (
    END,
    START,
    approval,
    definition,
    instance,
    pending_task,
    run_due_jobs,
)

FORM = [
    {"key": "amount", "type": "number"},
    {"key": "vendor", "type": "string"},
    {"key": "note", "type": "string"},
    {"key": "count", "type": "integer"},
    {"key": "phone", "type": "string"},
]


def child_definition() -> dict[str, Any]:
    return definition(
        "child", [START, approval("review", "bob"), END], [("start", "review"), ("review", "end")]
    )


def parent_definition(parallel: bool = False) -> dict[str, Any]:
    """start -> sub (subprocess: child) -> after (handle task for hal) -> end;
    ``parallel``: start -> fork -> [sub | desk (handle, hal)] -> join -> end."""
    sub = {"key": "sub", "type": "subprocess", "definitionKey": "child"}
    if parallel:
        nodes = [
            START,
            {"key": "fork", "type": "parallel"},
            sub,
            {"key": "desk", "type": "handle", "assignees": {"users": ["hal"]}},
            {"key": "join", "type": "parallel"},
            END,
        ]
        edges = [
            ("start", "fork"),
            ("fork", "sub"),
            ("fork", "desk"),
            ("sub", "join"),
            ("desk", "join"),
            ("join", "end"),
        ]
        return definition("parent", nodes, edges, FORM)
    after = {"key": "after", "type": "handle", "assignees": {"users": ["hal"]}}
    edges = [("start", "sub"), ("sub", "after"), ("after", "end")]
    return definition("parent", [START, sub, after, END], edges, FORM)


async def deploy(engine: Engine, *, tenant: str = "default", parallel: bool = False) -> None:
    await engine.deploy(child_definition(), actor="dev", tenant=tenant)
    await engine.deploy(parent_definition(parallel), actor="dev", tenant=tenant)


async def failed_instance(
    engine: Engine,
    db: Database,
    clock: ManualClock,
    *,
    tenant: str = "default",
    form: dict[str, Any] | None = None,
) -> int:
    """A running parent whose ``sub`` node failed (child rejected)."""
    iid = await engine.start(
        "parent",
        form=form if form is not None else {"amount": 12.5, "vendor": "a&b c", "note": "n"},
        initiator="ann",
        tenant=tenant,
    )
    await run_due_jobs(db, clock)  # subprocess_spawn starts the child
    child = await child_of(db, iid)
    await engine.reject(await pending_task(db, child, "review"), actor="bob")
    await run_due_jobs(db, clock)  # subprocess_join: the sub node fails
    row = await instance(db, iid)
    assert row["status"] == "running" and "sub" in (row["error"] or ""), row
    return iid


async def child_of(db: Database, parent_id: int) -> int:
    from flowledger.db.engine_schema import workflow_instances

    async with db.read() as conn:
        return int(
            (
                await conn.execute(
                    select(workflow_instances.c.id).where(
                        workflow_instances.c.parent_instance_id == parent_id
                    )
                )
            ).scalar_one()
        )


async def repair_at(
    engine: Engine,
    instance_id: int,
    node_key: str = "sub",
    *,
    kind: str = "notify",
    error: str = "child instance was rejected",
    action: dict[str, Any] | None = None,
    enqueue: bool = False,
) -> int | None:
    """Open a repair ticket at ``node_key`` inside an engine step (what the
    failure policies do); with ``enqueue`` also enqueue its action."""
    async with engine.db.begin() as conn, engine.step(conn, instance_id, "system") as step:
        [token] = [t for t, state in await live_tokens(step) if t.node_key == node_key]
        node = step.defn.node(node_key)
        ticket_id = await open_repair(
            step,
            token,
            node,
            error=error,
            kind=kind,
            action=action,
            admin_users=engine.settings.admin_users,
        )
        if enqueue and ticket_id is not None and action is not None:
            await enqueue_action(
                conn,
                ticket_id=ticket_id,
                tenant_id=str(step.instance["tenant_id"]),
                instance_id=instance_id,
                trace_id=step.trace_id,
                node_key=node_key,
                action=action,
                error=error,
                now=step.now,
                ledger=step.store.ledger,
            )
        return ticket_id


async def ticket(db: Database, ticket_id: int) -> dict[str, Any]:
    async with db.read() as conn:
        row = (
            (
                await conn.execute(
                    select(workflow_compensations).where(workflow_compensations.c.id == ticket_id)
                )
            )
            .mappings()
            .one()
        )
    return dict(row)


async def history(db: Database, ticket_id: int) -> list[dict[str, Any]]:
    logs = workflow_compensation_logs
    async with db.read() as conn:
        rows = await conn.execute(
            select(logs).where(logs.c.compensation_id == ticket_id).order_by(logs.c.id)
        )
        return [dict(r) for r in rows.mappings().all()]


async def audit_rows(db: Database, ticket_id: int) -> list[dict[str, Any]]:
    async with db.read() as conn:
        rows = await conn.execute(
            select(operation_audit)
            .where(
                operation_audit.c.target_type == "compensation",
                operation_audit.c.target_id == str(ticket_id),
            )
            .order_by(operation_audit.c.id)
        )
        return [dict(r) for r in rows.mappings().all()]


async def form_writes(db: Database, instance_id: int) -> list[dict[str, Any]]:
    async with db.read() as conn:
        rows = await conn.execute(
            select(workflow_form_writes)
            .where(workflow_form_writes.c.instance_id == instance_id)
            .order_by(workflow_form_writes.c.id)
        )
        return [dict(r) for r in rows.mappings().all()]
