"""Who administers a tenant's repairs (SPEC C-3): the users who get the
catch-node repair task of a failed node.

Resolution, per tenant, first hit wins:

1. the tenant's entry in ``settings.admin_users``
   (``"tenantA:alice|bob;*:admin"``);
2. that setting's ``*`` entry;
3. the users holding role ``workflow_admin`` who see the tenant (their
   ``tenants`` contain it or ``*``), in user-id order.

An empty result means nobody can repair the instance; the caller rejects it
(C-3). Reads only.
"""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import users
from flowledger.errors import ConfigurationError

ADMIN_ROLE = "workflow_admin"
ANY_TENANT = "*"


def parse_admin_users(text: str) -> dict[str, list[str]]:
    """``"tenantA:alice|bob;*:admin"`` → ``{"tenantA": ["alice", "bob"], "*": ["admin"]}``.
    Blank entries are ignored; an entry without ``:`` is a ConfigurationError."""
    table: dict[str, list[str]] = {}
    for raw in text.split(";"):
        entry = raw.strip()
        if not entry:
            continue
        tenant, sep, people = entry.partition(":")
        if not sep or not tenant.strip():
            raise ConfigurationError(
                f"admin_users entry {entry!r} is not 'tenant:user|user'", field="admin_users"
            )
        names = [p.strip() for p in people.split("|") if p.strip()]
        table.setdefault(tenant.strip(), []).extend(names)
    return {tenant: list(dict.fromkeys(names)) for tenant, names in table.items()}


async def resolve_admins(conn: AsyncConnection, tenant: str, setting: str) -> list[str]:
    """The administrators of ``tenant`` (see the module docstring)."""
    table = parse_admin_users(setting)
    for key in (tenant, ANY_TENANT):
        if table.get(key):
            return table[key]
    rows = (
        await conn.execute(select(users.c.id, users.c.roles, users.c.tenants).order_by(users.c.id))
    ).all()
    return [
        row.id
        for row in rows
        if ADMIN_ROLE in (row.roles or [])
        and (ANY_TENANT in (row.tenants or []) or tenant in (row.tenants or []))
    ]
