"""A migration as an operator asks for it (issue 30, SPEC A-2, A-3): the
plan checked against the caller (:func:`check_plan`: instance ids or a
filter, not both; a tenant the caller sees), and a run audited
``migration.run`` (:func:`run_as`: target the saved plan, the definition,
versions, mapping and per-outcome counts in its detail). The run migrates
each instance in its own transaction, so its row is written when the run
ends (:func:`flowledger.access.audit.audited`)."""

from __future__ import annotations

from flowledger.access.audit import AuditContext, audited
from flowledger.access.callers import Caller
from flowledger.clock import Clock
from flowledger.engine.store import EngineStore
from flowledger.ops.migration import service
from flowledger.ops.migration.model import MigrationInvalid, MigrationPlan


def check_plan(plan: MigrationPlan, caller: Caller) -> MigrationPlan:
    """``plan`` once ``caller`` may run it (422 ``migration_invalid``)."""
    if plan.instance_ids is not None and plan.filter is not None:
        raise MigrationInvalid("give instanceIds or filter, not both", field="filter")
    if not caller.sees(plan.tenant):
        raise MigrationInvalid(f"tenant {plan.tenant!r} is not yours", field="tenant")
    return plan


async def run_as(
    ctx: AuditContext, caller: Caller, plan: MigrationPlan, *, store: EngineStore, clock: Clock
) -> int:
    """Save and run ``plan`` by ``caller``, audited; the saved plan's id."""
    async with audited(ctx, caller, "migration.run", "migration", reason=plan.reason) as e:
        check_plan(plan, caller)
        e.tenant_id = plan.tenant
        migration_id = await service.run(ctx.db, store, plan, actor=caller.user_id, clock=clock)
        e.target_id = str(migration_id)
        found = await service.progress(ctx.db, migration_id, limit=0)
        e.detail.update(
            definitionKey=plan.definition_key,
            fromVersions=list(plan.from_versions),
            toVersion=plan.to_version,
            mapping=found["mapping"],
            **found["progress"]["byOutcome"],
        )
    return migration_id
