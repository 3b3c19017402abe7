"""Saved migration plans and their per-instance results (issue 30):
``workflow_migrations`` and ``workflow_migration_items``
(:mod:`flowledger.db.migration_schema`). A run saves its plan first
(status ``running``), one item per instance as it goes, and its counts and
``done`` at the end; :func:`load` reads a plan back with its progress."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.migration_schema import workflow_migration_items as items
from flowledger.db.migration_schema import workflow_migrations as migrations
from flowledger.ops.migration.model import MigrationNotFound, MigrationPlan


def selection_of(plan: MigrationPlan) -> dict[str, Any]:
    if plan.instance_ids is not None:
        return {"instanceIds": list(plan.instance_ids)}
    if plan.filter is None:
        return {"filter": {}}
    return {
        "filter": {
            k: (
                list(v) if isinstance(v, tuple) else v.isoformat() if isinstance(v, datetime) else v
            )
            for k, v in plan.filter.__dict__.items()
            if v is not None and k != "tenants"
        }
    }


async def save_plan(
    conn: AsyncConnection,
    plan: MigrationPlan,
    mapping: dict[str, str],
    *,
    actor: str,
    now: datetime,
    total: int,
) -> int:
    name = plan.name or (
        f"{plan.definition_key} v{','.join(map(str, plan.from_versions))} → v{plan.to_version}"
    )
    result = await conn.execute(
        insert(migrations)
        .values(
            tenant_id=plan.tenant,
            name=name,
            definition_key=plan.definition_key,
            from_versions=list(plan.from_versions),
            to_version=plan.to_version,
            selection=selection_of(plan),
            mapping=mapping,
            field_values=plan.field_values,
            reason=plan.reason,
            status="running",
            counts={"total": total},
            created_by=actor,
            created_at=now,
            started_at=now,
        )
        .returning(migrations.c.id)
    )
    return int(result.scalar_one())


async def add_item(
    conn: AsyncConnection,
    migration_id: int,
    result: dict[str, Any],
    *,
    outcome: str,
    now: datetime,
    error: str | None = None,
) -> None:
    await conn.execute(
        insert(items).values(
            migration_id=migration_id,
            instance_id=result["instanceId"],
            verdict=result["verdict"],
            outcome=outcome,
            result=result,
            error=error,
            finished_at=now,
        )
    )


async def finish(
    conn: AsyncConnection, migration_id: int, counts: dict[str, int], now: datetime
) -> None:
    await conn.execute(
        update(migrations)
        .where(migrations.c.id == migration_id)
        .values(status="done", counts=counts, finished_at=now)
    )


async def load(
    conn: AsyncConnection,
    migration_id: int,
    *,
    tenants: tuple[str, ...] | None,
    outcome: str | None = None,
    limit: int = 500,
    offset: int = 0,
) -> dict[str, Any]:
    row = (
        (await conn.execute(select(migrations).where(migrations.c.id == migration_id)))
        .mappings()
        .first()
    )
    if row is None or (tenants is not None and row["tenant_id"] not in tenants):
        raise MigrationNotFound(f"migration {migration_id} not found", field="id")
    by_outcome = {
        str(r.outcome): int(r.n)
        for r in (
            await conn.execute(
                select(items.c.outcome, func.count().label("n"))
                .where(items.c.migration_id == migration_id)
                .group_by(items.c.outcome)
            )
        ).all()
    }
    query = select(items).where(items.c.migration_id == migration_id)
    if outcome is not None:
        query = query.where(items.c.outcome == outcome)
    rows = (
        (await conn.execute(query.order_by(items.c.instance_id).limit(limit).offset(offset)))
        .mappings()
        .all()
    )
    total = int((row["counts"] or {}).get("total", 0))
    done = sum(by_outcome.values())
    return {
        "id": int(row["id"]),
        "name": row["name"],
        "tenant": row["tenant_id"],
        "definitionKey": row["definition_key"],
        "fromVersions": row["from_versions"],
        "toVersion": row["to_version"],
        "selection": row["selection"],
        "mapping": row["mapping"],
        "fieldValues": row["field_values"],
        "reason": row["reason"],
        "status": row["status"],
        "createdBy": row["created_by"],
        "createdAt": row["created_at"],
        "finishedAt": row["finished_at"],
        "progress": {"total": total, "done": done, "byOutcome": by_outcome},
        "items": [
            {
                "instanceId": int(r["instance_id"]),
                "verdict": r["verdict"],
                "outcome": r["outcome"],
                "error": r["error"],
                "result": r["result"],
            }
            for r in rows
        ],
    }
