"""Preview, run and progress of instance migrations, and the version
drainage view (issue 30).

:func:`preview` — the dry run: one read transaction (versions, mapping,
instances, their state, users), then :func:`~.planner.plan_instance` per
instance; nothing is written. :func:`run` — saves the plan, then each
selected instance in its own transaction: its row locked first, its state
read again and planned again under the lock (an instance that changed since
the preview gets its new verdict), the write
(:meth:`~flowledger.engine.store.protocol.EngineStore.instance_migrate`),
an ``operation_audit`` row and the instance's result item — or, when the
verdict is ``blocked``, only the item. A failing instance rolls back alone
and is recorded ``failed``; the others go on. :func:`running_versions` —
running instances per version of a definition, oldest first."""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any

from sqlalchemy import case, func, insert, select

from flowledger.clock import Clock
from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit, workflow_instances
from flowledger.definitions.expressions import ExpressionError
from flowledger.definitions.templates import validate_template
from flowledger.engine.force_jump import clean_reason
from flowledger.engine.store import EngineStore
from flowledger.ops.migration import plans
from flowledger.ops.migration.inputs import PlanInputs
from flowledger.ops.migration.mapping import plan_mapping
from flowledger.ops.migration.model import (
    BLOCKED,
    MigrationInvalid,
    MigrationPlan,
)
from flowledger.ops.migration.planner import Planned, plan_instance
from flowledger.ops.migration.reads import (
    load_states,
    load_users,
    load_versions,
    lock_state,
    select_instance_ids,
)
from flowledger.states import InstanceStatus

# instances migrated at once, each in its own transaction and connection
CONCURRENCY = 4


@dataclass
class Preview:
    mapping: dict[str, str]
    results: list[dict[str, Any]]

    def counts(self) -> dict[str, int]:
        found = Counter(r["verdict"] for r in self.results)
        return {v: found.get(v, 0) for v in ("ok", "changed", "blocked")}

    def reason_counts(self) -> dict[str, int]:
        found = Counter(reason["code"] for r in self.results for reason in r["reasons"])
        return dict(sorted(found.items()))


def _check_plan(plan: MigrationPlan, *, run: bool) -> MigrationPlan:
    """The plan's own checks; a run needs a reason (a dry run does not)."""
    if run:
        clean_reason(plan.reason)
    if not plan.from_versions:
        raise MigrationInvalid("name at least one source version", field="fromVersions")
    if plan.to_version in plan.from_versions:
        raise MigrationInvalid("the target is one of the source versions", field="toVersion")
    return plan


async def _inputs(
    conn: Any, plan: MigrationPlan, actor: str, migration_id: int | None = None
) -> tuple[PlanInputs, dict[str, str]]:
    sources = await load_versions(
        conn, plan.tenant, plan.definition_key, list(plan.from_versions), "fromVersions"
    )
    target = (
        await load_versions(conn, plan.tenant, plan.definition_key, [plan.to_version], "toVersion")
    )[plan.to_version]
    mapping = plan_mapping([v.defn for v in sources.values()], target.defn, plan.mapping)
    fields = {f.key for f in target.defn.form.fields}
    for key, value in plan.field_values.items():
        if key not in fields:
            raise MigrationInvalid(
                f"{key!r} is not a form field of the target version", field=f"fieldValues.{key}"
            )
        if isinstance(value, dict) and set(value) == {"template"}:
            try:
                validate_template(str(value["template"]))
            except ExpressionError as exc:
                raise MigrationInvalid(str(exc), field=f"fieldValues.{key}") from exc
    inputs = PlanInputs(
        sources=sources,
        target=target,
        mapping=mapping,
        field_values=dict(plan.field_values),
        users=await load_users(conn),
        actor=actor,
        reason=plan.reason.strip(),
        migration_id=migration_id,
    )
    return inputs, mapping


async def preview(db: Database, plan: MigrationPlan, *, actor: str, clock: Clock) -> Preview:
    """The dry run of ``plan``: every selected instance's result; writes nothing."""
    _check_plan(plan, run=False)
    now = clock.now()
    async with db.read() as conn:
        inputs, mapping = await _inputs(conn, plan, actor)
        ids = await select_instance_ids(conn, plan, now)
        states = await load_states(conn, ids)
    results = [plan_instance(states[i], inputs, now=now).result.to_public() for i in ids]
    return Preview(mapping, results)


async def run(
    db: Database,
    store: EngineStore,
    plan: MigrationPlan,
    *,
    actor: str,
    clock: Clock,
    per_second: float | None = None,
    concurrency: int = CONCURRENCY,
) -> int:
    """Run ``plan``: save it, migrate each non-blocked instance in its own
    transaction, ``concurrency`` transactions at a time (at most
    ``per_second`` instances a second when given); the saved plan's id (its
    results: :func:`progress`)."""
    _check_plan(plan, run=True)
    now = clock.now()
    async with db.begin() as conn:
        inputs, mapping = await _inputs(conn, plan, actor)
        ids = await select_instance_ids(conn, plan, now)
        migration_id = await plans.save_plan(
            conn, plan, mapping, actor=actor, now=now, total=len(ids)
        )
    inputs = PlanInputs(**{**inputs.__dict__, "migration_id": migration_id})
    counts: Counter[str] = Counter()
    queue = list(reversed(ids))

    async def worker() -> None:
        while queue:
            instance_id = queue.pop()
            counts[await _run_one(db, store, inputs, instance_id, clock)] += 1
            if per_second:
                await asyncio.sleep(concurrency / per_second)

    await asyncio.gather(*(worker() for _ in range(max(1, min(concurrency, len(ids))))))
    async with db.begin() as conn:
        await plans.finish(
            conn,
            migration_id,
            {"total": len(ids), **{k: counts.get(k, 0) for k in ("migrated", "blocked", "failed")}},
            clock.now(),
        )
    return migration_id


async def _run_one(
    db: Database, store: EngineStore, inputs: PlanInputs, instance_id: int, clock: Clock
) -> str:
    assert inputs.migration_id is not None
    planned: Planned | None = None
    try:
        async with db.begin() as conn:
            now = clock.now()
            state = await lock_state(conn, instance_id)
            if state is None:  # deleted (retention) since the selection
                raise LookupError(f"instance {instance_id} no longer exists")
            planned = plan_instance(state, inputs, now=now)
            result = planned.result.to_public()
            if planned.write is None:
                await plans.add_item(conn, inputs.migration_id, result, outcome=BLOCKED, now=now)
                return BLOCKED
            await store.instance_migrate(conn, planned.write)
            await conn.execute(
                insert(operation_audit).values(
                    actor=inputs.actor,
                    action="instance.migrate",
                    target_type="instance",
                    target_id=str(instance_id),
                    tenant_id=state.instance.tenant_id,
                    reason=inputs.reason,
                    detail={
                        "migrationId": inputs.migration_id,
                        "fromVersion": result["fromVersion"],
                        "toVersion": result["toVersion"],
                        "mapping": inputs.mapping,
                        "verdict": result["verdict"],
                    },
                    result="ok",
                    created_at=now,
                )
            )
            await plans.add_item(conn, inputs.migration_id, result, outcome="migrated", now=now)
            return "migrated"
    except Exception as exc:  # one instance's failure never stops the others
        failed = (
            planned.result.to_public()
            if planned is not None
            else {"instanceId": instance_id, "verdict": BLOCKED}
        )
        async with db.begin() as conn:
            await plans.add_item(
                conn,
                inputs.migration_id,
                failed,
                outcome="failed",
                now=clock.now(),
                error=f"{type(exc).__name__}: {exc}",
            )
        return "failed"


async def progress(
    db: Database,
    migration_id: int,
    *,
    tenants: tuple[str, ...] | None = None,
    outcome: str | None = None,
    limit: int = 500,
    offset: int = 0,
) -> dict[str, Any]:
    async with db.read() as conn:
        return await plans.load(
            conn, migration_id, tenants=tenants, outcome=outcome, limit=limit, offset=offset
        )


async def running_versions(
    db: Database, key: str, *, tenants: tuple[str, ...] | None = None
) -> list[dict[str, Any]]:
    """Per version of ``key``: running (and suspended) instances and the
    oldest one's start, oldest version first."""
    i = workflow_instances.c
    query = (
        select(
            i.definition_version,
            func.sum(case((i.status == InstanceStatus.RUNNING.value, 1), else_=0)).label("running"),
            func.sum(case((i.status == InstanceStatus.SUSPENDED.value, 1), else_=0)).label(
                "suspended"
            ),
            func.min(i.created_at).label("oldest"),
        )
        .where(
            i.definition_key == key,
            i.status.in_([InstanceStatus.RUNNING.value, InstanceStatus.SUSPENDED.value]),
        )
        .group_by(i.definition_version)
        .order_by(i.definition_version)
    )
    if tenants is not None:
        query = query.where(i.tenant_id.in_(tenants))
    async with db.read() as conn:
        rows = (await conn.execute(query)).all()
    return [
        {
            "version": int(r.definition_version),
            "running": int(r.running or 0),
            "suspended": int(r.suspended or 0),
            "oldestStartedAt": r.oldest,
        }
        for r in rows
    ]
