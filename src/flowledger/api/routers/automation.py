"""Automation rules (SPEC X-6): create, list, read, change and delete.

Writing needs ``workflow:definition:manage``; reading needs that or
``workflow:instance:monitor`` (A-2). Rules are tenant-scoped (A-3): a rule
of a tenant the caller cannot see is 404. Every write is audited
(``automation_rule.create|update|delete``). A rule whose templates use
anything but ``system.*`` / ``formData.*``, whose condition does not compile,
or whose actions are incomplete is 422 ``automation_rule_invalid`` naming
the field (``actions[0].bodyTemplate``); secret header values are never
returned (``********``). Every change is one call of
:mod:`flowledger.events.automation_changes` (its transaction and audit row).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Self

from fastapi import APIRouter, Path, Query, Response

from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.pagination import Cursor, Limit, cursor_for, decode_cursor
from flowledger.api.permissions import DEFINITION_MANAGE, INSTANCE_MONITOR
from flowledger.api.route_access import Audit, GuardedRoute, allow
from flowledger.api.schemas import MAX_ID, ApiModel, TenantId
from flowledger.events import automation_changes as changes
from flowledger.events import automation_store as store
from flowledger.events.automation_rules import (
    ACTIONS,
    Action,
    RulePatch,
    RuleSpec,
    public_actions,
)

router = APIRouter(prefix="/automation-rules", tags=["automation"], route_class=GuardedRoute)

RuleId = Annotated[int, Path(alias="ruleId", ge=1, le=MAX_ID)]


class AutomationRuleCreate(RuleSpec):
    tenant: TenantId | None = None


class AutomationRulePublic(ApiModel):
    id: int
    tenant: str
    name: str
    event_types: list[str]
    definition_key: str | None = None
    condition: str | None = None
    actions: list[Action]
    enabled: bool
    created_by: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def of(cls, rule: store.Rule) -> Self:
        return cls(
            id=rule.id,
            tenant=rule.tenant_id,
            name=rule.name,
            event_types=rule.event_types,
            definition_key=rule.definition_key,
            condition=rule.condition,
            actions=ACTIONS.validate_python(public_actions(rule.actions)),
            enabled=rule.enabled,
            created_by=rule.created_by,
            created_at=rule.created_at,
            updated_at=rule.updated_at,
        )


class AutomationRulePage(ApiModel):
    items: list[AutomationRulePublic]
    next: str | None = None


@router.get(
    "", response_model=AutomationRulePage, dependencies=[allow(DEFINITION_MANAGE, INSTANCE_MONITOR)]
)
async def list_automation_rules(
    ctx: Ctx,
    caller: CurrentCaller,
    enabled: bool | None = None,
    definition_key: Annotated[
        str | None, Query(alias="definitionKey", max_length=64, pattern=r"^[^\x00]*$")
    ] = None,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> AutomationRulePage:
    """Rules of the caller's tenants, newest first."""
    after = decode_cursor(cursor, (int,))
    async with ctx.db.read() as conn:
        page = await store.list_rules(
            conn,
            tenants=caller.tenant_scope,
            enabled=enabled,
            definition_key=definition_key,
            after_id=None if after is None else after[0],
            limit=limit,
        )
    key = None if page.next_after is None else [page.next_after]
    return AutomationRulePage(
        items=[AutomationRulePublic.of(r) for r in page.items], next=cursor_for(key)
    )


@router.post(
    "",
    status_code=201,
    response_model=AutomationRulePublic,
    dependencies=[
        allow(DEFINITION_MANAGE, audit=Audit("automation_rule.create", "automation_rule"))
    ],
)
async def create_automation_rule(
    body: AutomationRuleCreate, ctx: Ctx, caller: CurrentCaller
) -> AutomationRulePublic:
    """A rule that runs its actions as ``automation_action`` jobs on the
    events it names (in the caller's first tenant unless ``tenant`` is given)."""
    rule = await changes.create_rule(ctx, caller, body, tenant=body.tenant, box=ctx.secrets)
    return AutomationRulePublic.of(rule)


@router.get(
    "/{ruleId}",
    response_model=AutomationRulePublic,
    dependencies=[allow(DEFINITION_MANAGE, INSTANCE_MONITOR)],
)
async def get_automation_rule(
    rule_id: RuleId, ctx: Ctx, caller: CurrentCaller
) -> AutomationRulePublic:
    async with ctx.db.read() as conn:
        rule = await store.get_rule(conn, rule_id, tenants=caller.tenant_scope)
    if rule is None:
        raise changes.not_found(rule_id)
    return AutomationRulePublic.of(rule)


@router.patch(
    "/{ruleId}",
    response_model=AutomationRulePublic,
    dependencies=[
        allow(DEFINITION_MANAGE, audit=Audit("automation_rule.update", "automation_rule", "ruleId"))
    ],
)
async def update_automation_rule(
    rule_id: RuleId, body: RulePatch, ctx: Ctx, caller: CurrentCaller
) -> AutomationRulePublic:
    """Change some of a rule's keys; ``actions`` replaces the whole list (a
    secret header sent back as ``********`` keeps its stored value)."""
    rule = await changes.update_rule(ctx, caller, rule_id, body, box=ctx.secrets)
    return AutomationRulePublic.of(rule)


@router.delete(
    "/{ruleId}",
    status_code=204,
    response_class=Response,
    dependencies=[
        allow(DEFINITION_MANAGE, audit=Audit("automation_rule.delete", "automation_rule", "ruleId"))
    ],
)
async def delete_automation_rule(rule_id: RuleId, ctx: Ctx, caller: CurrentCaller) -> Response:
    """Delete a rule; its jobs not yet run are skipped when they run."""
    await changes.delete_rule(ctx, caller, rule_id)
    return Response(status_code=204)
