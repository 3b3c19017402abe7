"""Creating, changing and deleting connectors (SPEC X-3, A-2, A-3): each one
transaction holding the change and its ``operation_audit`` row
(``connector.create|update|delete``, naming the changed settings, never a
secret's value). A connector of a tenant the caller cannot see is 404
``connector_not_found``. The rows are written by
:mod:`flowledger.outbound.connector_store`; this service sits here, above
the audit (:mod:`flowledger.access.audit`), because ``outbound/`` lies below
it, beside the other integrations' changes
(:mod:`.subscription_changes`, :mod:`.automation_changes`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from flowledger.access.audit import AuditContext, AuditEntry, audited_change
from flowledger.access.callers import Caller
from flowledger.access.permissions import require_tenant
from flowledger.outbound import connector_store as store
from flowledger.outbound.connector_config import ConnectorDraft
from flowledger.outbound.connector_errors import ConnectorNotFound
from flowledger.outbound.secrets import SecretBox


def not_found(connector_id: int) -> ConnectorNotFound:
    return ConnectorNotFound(f"connector {connector_id} not found", field="connectorId")


async def create_connector(
    ctx: AuditContext,
    caller: Caller,
    draft: ConnectorDraft,
    *,
    tenant: str | None,
    box: SecretBox,
) -> store.Connector:
    """A new connector in ``tenant`` (default: the caller's first); a taken
    key is 409 ``connector_key_taken``."""
    entry = AuditEntry.by(caller, "connector.create", "connector")
    async with audited_change(ctx, entry) as conn:
        tenant = tenant or caller.default_tenant
        require_tenant(caller, tenant)
        entry.tenant_id = tenant
        entry.detail.update(key=draft.key, authKind=draft.auth_kind)
        connector = await store.create_connector(
            conn, draft, tenant=tenant, actor=caller.user_id, now=ctx.now(), box=box
        )
        entry.target_id = str(connector.id)
        entry.detail["baseUrl"] = connector.base_url  # validated: no credentials in it
    return connector


async def update_connector(
    ctx: AuditContext,
    caller: Caller,
    connector_id: int,
    changes: Mapping[str, Any],
    *,
    changed: list[str],
    box: SecretBox,
) -> store.Connector:
    """Change the given settings (``changed``: their names as sent)."""
    entry = AuditEntry.by(caller, "connector.update", "connector", connector_id)
    async with audited_change(ctx, entry) as conn:
        entry.detail["changed"] = changed
        current = await store.get_connector(
            conn, connector_id, tenants=caller.tenant_scope, for_update=True
        )
        if current is None:
            raise not_found(connector_id)
        entry.tenant_id = current.tenant_id
        entry.detail["key"] = current.key
        return await store.update_connector(conn, current, changes, now=ctx.now(), box=box)


async def delete_connector(ctx: AuditContext, caller: Caller, connector_id: int) -> None:
    """Delete a connector (its call audit stays)."""
    entry = AuditEntry.by(caller, "connector.delete", "connector", connector_id)
    async with audited_change(ctx, entry) as conn:
        current = await store.get_connector(
            conn, connector_id, tenants=caller.tenant_scope, for_update=True
        )
        if current is None:
            raise not_found(connector_id)
        entry.tenant_id = current.tenant_id
        entry.detail["key"] = current.key
        await store.delete_connector(conn, connector_id)
