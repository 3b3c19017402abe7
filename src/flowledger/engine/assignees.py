"""Who a task may be handed to (issue 17 item 8, SPEC E-11, O-5): a transfer
or reassign names an existing user who sees the task's tenant (``tenants``
holds it or ``*``). Anything else would orphan the task — nobody could see
or act on it. One primary-key read of ``users``."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import users
from flowledger.errors import FlowledgerError


class AssigneeUnknown(FlowledgerError):
    """422: the user does not exist or cannot see the task's tenant."""

    code = "assignee_unknown"


async def require_tenant_user(conn: AsyncConnection, user_id: str, tenant: str) -> None:
    tenants = (
        await conn.execute(select(users.c.tenants).where(users.c.id == user_id))
    ).scalar_one_or_none()
    if tenants is None or not ("*" in tenants or tenant in tenants):
        raise AssigneeUnknown(
            f"{user_id!r} is not a user of tenant {tenant!r}", field="to", tenant=tenant
        )
