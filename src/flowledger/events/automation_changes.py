"""Creating, changing and deleting automation rules (SPEC X-6, A-2, A-3):
each one transaction holding the change and its ``operation_audit`` row
(``automation_rule.create|update|delete``). A rule of a tenant the caller
cannot see is 404 ``automation_rule_not_found``; the rows are written by
:mod:`flowledger.events.automation_store`."""

from __future__ import annotations

from flowledger.access.audit import AuditContext, AuditEntry, audited_change
from flowledger.access.callers import Caller
from flowledger.access.permissions import require_tenant
from flowledger.errors import NotFoundError
from flowledger.events import automation_store as store
from flowledger.events.automation_rules import RulePatch, RuleSpec
from flowledger.events.automation_store import Rule
from flowledger.outbound.secrets import SecretBox


class AutomationRuleNotFound(NotFoundError):
    code = "automation_rule_not_found"


def not_found(rule_id: int) -> AutomationRuleNotFound:
    return AutomationRuleNotFound(f"automation rule {rule_id} not found", field="ruleId")


async def create_rule(
    ctx: AuditContext, caller: Caller, spec: RuleSpec, *, tenant: str | None, box: SecretBox | None
) -> Rule:
    """A rule in ``tenant`` (default: the caller's first tenant)."""
    entry = AuditEntry.by(caller, "automation_rule.create", "automation_rule")
    async with audited_change(ctx, entry) as conn:
        tenant = tenant or caller.default_tenant
        require_tenant(caller, tenant)
        entry.tenant_id = tenant
        entry.detail.update(name=spec.name, eventTypes=spec.event_types)
        rule = await store.create_rule(
            conn, spec, tenant=tenant, actor=caller.user_id, now=ctx.now(), box=box
        )
        entry.target_id = str(rule.id)
    return rule


async def update_rule(
    ctx: AuditContext, caller: Caller, rule_id: int, patch: RulePatch, *, box: SecretBox | None
) -> Rule:
    """Apply ``patch`` to a rule the caller sees."""
    entry = AuditEntry.by(caller, "automation_rule.update", "automation_rule", rule_id)
    async with audited_change(ctx, entry) as conn:
        entry.detail["fields"] = sorted(patch.model_dump(exclude_unset=True, by_alias=True))
        rule = await store.update_rule(
            conn, rule_id, patch, tenants=caller.tenant_scope, now=ctx.now(), box=box
        )
        if rule is None:
            raise not_found(rule_id)
        entry.tenant_id = rule.tenant_id
    return rule


async def delete_rule(ctx: AuditContext, caller: Caller, rule_id: int) -> None:
    """Delete a rule; its jobs not yet run are skipped when they run."""
    entry = AuditEntry.by(caller, "automation_rule.delete", "automation_rule", rule_id)
    async with audited_change(ctx, entry) as conn:
        rule = await store.delete_rule(conn, rule_id, tenants=caller.tenant_scope)
        if rule is None:
            raise not_found(rule_id)
        entry.tenant_id = rule.tenant_id
        entry.detail["name"] = rule.name
