"""Who a user's manager is (issue 31 item 4): ``users.manager_id``, read by
a deadline's ``transfer`` to ``manager`` (``engine.escalation``) and set
here (CLI ``flowledger user set-manager``). A manager is an existing user,
not the user itself, and the chain of managers never loops back."""

from __future__ import annotations

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.engine_schema import users
from flowledger.errors import FlowledgerError, NotFoundError

#: the longest chain of managers followed when looking for a loop
MAX_CHAIN = 256


class ManagerInvalid(FlowledgerError):
    """The manager is the user itself, or one of the user's reports."""

    code = "manager_invalid"


async def _manager_of(conn: AsyncConnection, user_id: str) -> str | bool | None:
    """The user's manager (None: none); False when there is no such user."""
    row = (await conn.execute(select(users.c.manager_id).where(users.c.id == user_id))).first()
    return False if row is None else row.manager_id


async def set_manager(conn: AsyncConnection, user_id: str, manager_id: str | None) -> None:
    """Make ``manager_id`` (None: nobody) the manager of ``user_id``."""
    if await _manager_of(conn, user_id) is False:
        raise NotFoundError(f"no user {user_id!r}", field="user")
    if manager_id is not None:
        if manager_id == user_id:
            raise ManagerInvalid(f"{user_id!r} cannot be their own manager", field="manager")
        above = await _manager_of(conn, manager_id)
        if above is False:
            raise NotFoundError(f"no user {manager_id!r}", field="manager")
        for _ in range(MAX_CHAIN):
            if not isinstance(above, str):
                break
            if above == user_id:
                raise ManagerInvalid(
                    f"{manager_id!r} reports to {user_id!r}: that would be a loop",
                    field="manager",
                )
            above = await _manager_of(conn, above)
    await conn.execute(update(users).where(users.c.id == user_id).values(manager_id=manager_id))


async def manager_of(conn: AsyncConnection, user_id: str) -> str | None:
    found = await _manager_of(conn, user_id)
    return found if isinstance(found, str) else None
