"""Automation rules at rest (SPEC X-6): create, read, list, change and delete
rows of ``workflow_automation_rules`` in the caller's transaction, and the
relay's lookup of a tenant's enabled rules.

Every write checks the rule first (:mod:`flowledger.events.automation_rules`),
so no caller can store a rule whose templates or condition are invalid.
Reads may be limited to some tenants (``tenants=None``: all of them); a rule
outside them is reported as missing (``None``).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from pydantic.alias_generators import to_camel
from sqlalchemy import ColumnElement, Select, delete, exists, or_, select, true, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.automation_schema import workflow_automation_rules as rules
from flowledger.events.automation_rules import (
    RulePatch,
    RuleSpec,
    check_actions,
    check_condition,
    stored_actions,
)
from flowledger.events.automation_templates import AutomationRuleInvalid
from flowledger.outbound.secrets import SecretBox

Tenants = list[str] | None


@dataclass(frozen=True)
class Rule:
    """One stored rule; ``actions`` as stored (secret values encrypted)."""

    id: int
    tenant_id: str
    name: str
    event_types: list[str]
    definition_key: str | None
    condition: str | None
    actions: list[dict[str, Any]]
    enabled: bool
    created_by: str
    created_at: datetime
    updated_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> Rule:
        return cls(
            id=int(row["id"]),
            tenant_id=row["tenant_id"],
            name=row["name"],
            event_types=list(row["event_types"]),
            definition_key=row["definition_key"],
            condition=row["condition"],
            actions=list(row["actions"]),
            enabled=bool(row["enabled"]),
            created_by=row["created_by"],
            created_at=row["created_at"],
            updated_at=row["updated_at"],
        )


@dataclass(frozen=True)
class RulePage:
    items: list[Rule]
    next_after: int | None


def _scoped(query: Select[Any], tenants: Tenants) -> Select[Any]:
    return query if tenants is None else query.where(rules.c.tenant_id.in_(tenants))


async def create_rule(
    conn: AsyncConnection,
    spec: RuleSpec,
    *,
    tenant: str,
    actor: str,
    now: datetime,
    box: SecretBox | None = None,
) -> Rule:
    """Insert a rule for ``tenant`` (secret header values encrypted with ``box``)."""
    check_condition(spec.condition)
    check_actions(spec.actions)
    result = await conn.execute(
        rules.insert()
        .values(
            tenant_id=tenant,
            name=spec.name,
            event_types=list(dict.fromkeys(spec.event_types)),
            definition_key=spec.definition_key,
            condition=spec.condition,
            actions=stored_actions(spec.actions, box=box),
            enabled=spec.enabled,
            created_by=actor,
            created_at=now,
            updated_at=now,
        )
        .returning(*rules.c)
    )
    return Rule.from_row(result.mappings().one())


async def get_rule(
    conn: AsyncConnection, rule_id: int, *, tenants: Tenants = None, lock: bool = False
) -> Rule | None:
    query = _scoped(select(rules).where(rules.c.id == rule_id), tenants)
    if lock:
        query = query.with_for_update()
    row = (await conn.execute(query)).mappings().first()
    return None if row is None else Rule.from_row(row)


async def list_rules(
    conn: AsyncConnection,
    *,
    tenants: Tenants,
    enabled: bool | None = None,
    definition_key: str | None = None,
    after_id: int | None = None,
    limit: int = 50,
) -> RulePage:
    """Rules newest first; ``after_id`` continues after the previous page."""
    query = _scoped(select(rules), tenants)
    if enabled is not None:
        query = query.where(rules.c.enabled == enabled)
    if definition_key is not None:
        query = query.where(rules.c.definition_key == definition_key)
    if after_id is not None:
        query = query.where(rules.c.id < after_id)
    rows = (await conn.execute(query.order_by(rules.c.id.desc()).limit(limit + 1))).mappings()
    found = [Rule.from_row(r) for r in rows.all()]
    items = found[:limit]
    return RulePage(items=items, next_after=items[-1].id if len(found) > limit else None)


_NOT_NULL = ("name", "event_types", "actions", "enabled")


async def update_rule(
    conn: AsyncConnection,
    rule_id: int,
    patch: RulePatch,
    *,
    tenants: Tenants,
    now: datetime,
    box: SecretBox | None = None,
) -> Rule | None:
    """Apply ``patch`` to the rule (None when it is not visible)."""
    current = await get_rule(conn, rule_id, tenants=tenants, lock=True)
    if current is None:
        return None
    given = patch.model_fields_set
    for name in _NOT_NULL:
        if name in given and getattr(patch, name) is None:
            field = to_camel(name)
            raise AutomationRuleInvalid(f"{field}: must not be null", field=field)
    values: dict[str, Any] = {"updated_at": now}
    for name in ("name", "definition_key", "condition", "enabled"):
        if name in given:
            values[name] = getattr(patch, name)
    if "condition" in given:
        check_condition(patch.condition)
    if patch.event_types is not None:
        values["event_types"] = list(dict.fromkeys(patch.event_types))
    if patch.actions is not None:
        check_actions(patch.actions)
        values["actions"] = stored_actions(patch.actions, current.actions, box=box)
    await conn.execute(update(rules).where(rules.c.id == rule_id).values(**values))
    return await get_rule(conn, rule_id)


async def delete_rule(conn: AsyncConnection, rule_id: int, *, tenants: Tenants) -> Rule | None:
    """Delete the rule; its already enqueued jobs skip when they run."""
    current = await get_rule(conn, rule_id, tenants=tenants, lock=True)
    if current is not None:
        await conn.execute(delete(rules).where(rules.c.id == rule_id))
    return current


_ENABLED = rules.c.enabled == true()


async def enabled_rules(
    conn: AsyncConnection, *, tenant: str, definition_key: str | None
) -> list[Rule]:
    """The tenant's enabled rules that apply to ``definition_key`` (one
    probe of the (tenant, enabled) index), oldest first."""
    scope: ColumnElement[bool] = rules.c.definition_key.is_(None)
    if definition_key is not None:
        scope = or_(scope, rules.c.definition_key == definition_key)
    query = select(rules).where(rules.c.tenant_id == tenant, _ENABLED, scope).order_by(rules.c.id)
    return [Rule.from_row(r) for r in (await conn.execute(query)).mappings().all()]


def any_enabled_rule() -> ColumnElement[bool]:
    """Whether any tenant has an enabled rule (a condition to put in another
    statement)."""
    return exists().where(_ENABLED)


async def tenants_with_rules(conn: AsyncConnection, tenants: set[str]) -> set[str]:
    """Which of ``tenants`` have at least one enabled rule (one query for a
    whole dispatch batch, so events of rule-less tenants cost nothing)."""
    if not tenants:
        return set()
    query = (
        select(rules.c.tenant_id).where(rules.c.tenant_id.in_(sorted(tenants)), _ENABLED).distinct()
    )
    return {str(t) for t in (await conn.execute(query)).scalars()}


async def rule_enabled(conn: AsyncConnection, rule_id: int) -> bool | None:
    """Whether the rule is enabled (None: it no longer exists)."""
    row = (await conn.execute(select(rules.c.enabled).where(rules.c.id == rule_id))).first()
    return None if row is None else bool(row.enabled)
