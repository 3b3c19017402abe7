"""In-app messages (SPEC X-7): one ``workflow_messages`` row per message to
one recipient (a user id).

:func:`post_message` writes in the caller's transaction, so a message is
posted exactly when the change that caused it commits; :func:`mark_read`
too, and :func:`mark_read_alone` is the recipient's "mark read" in a
transaction of its own. The reads are the
recipient's own messages, newest first, keyset paged by id, optionally only
the unread ones (served by the index on (recipient, read_at, id)); every
read may be limited to some tenants (``tenants=None``: all of them).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Select, func, insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.database import Database
from flowledger.db.engine_schema import workflow_messages as m

TITLE_MAX = 255
LINK_MAX = 1024
KIND_MAX = 32


def _scoped(query: Select[Any], tenants: list[str] | None) -> Select[Any]:
    return query if tenants is None else query.where(m.c.tenant_id.in_(tenants))


@dataclass(frozen=True)
class Message:
    """One stored in-app message."""

    id: int
    tenant_id: str
    recipient: str
    title: str
    body: str
    link: str | None
    kind: str
    read_at: datetime | None
    created_at: datetime

    @classmethod
    def from_row(cls, row: Any) -> Message:
        return cls(
            id=int(row["id"]),
            tenant_id=row["tenant_id"],
            recipient=row["recipient"],
            title=row["title"],
            body=row["body"],
            link=row["link"],
            kind=row["kind"],
            read_at=row["read_at"],
            created_at=row["created_at"],
        )


@dataclass(frozen=True)
class MessagePage:
    """A page of messages and the id to continue after (None: last page)."""

    items: list[Message]
    next_after: int | None


async def post_message(
    conn: AsyncConnection,
    *,
    tenant: str,
    recipient: str,
    title: str,
    body: str,
    kind: str,
    link: str | None = None,
    now: datetime,
) -> int:
    """Insert one unread message for ``recipient`` in the caller's
    transaction and return its id. An over-long title is cut to the column."""
    if not recipient:
        raise ValueError("a message needs a recipient")
    if link is not None and len(link) > LINK_MAX:
        raise ValueError(f"link is longer than {LINK_MAX} characters")
    result = await conn.execute(
        insert(m)
        .values(
            tenant_id=tenant,
            recipient=recipient,
            title=title[:TITLE_MAX],
            body=body,
            link=link,
            kind=kind[:KIND_MAX],
            read_at=None,
            created_at=now,
        )
        .returning(m.c.id)
    )
    return int(result.scalar_one())


async def list_messages(
    conn: AsyncConnection,
    *,
    recipient: str,
    tenants: list[str] | None = None,
    unread_only: bool = False,
    after_id: int | None = None,
    limit: int = 50,
) -> MessagePage:
    """``recipient``'s messages, newest first; ``after_id`` continues after
    the last message of the previous page."""
    query = _scoped(select(m).where(m.c.recipient == recipient), tenants)
    if unread_only:
        query = query.where(m.c.read_at.is_(None))
    if after_id is not None:
        query = query.where(m.c.id < after_id)
    rows = (await conn.execute(query.order_by(m.c.id.desc()).limit(limit + 1))).mappings().all()
    items = [Message.from_row(r) for r in rows[:limit]]
    return MessagePage(items=items, next_after=items[-1].id if len(rows) > limit else None)


async def get_message(
    conn: AsyncConnection, *, recipient: str, message_id: int, tenants: list[str] | None = None
) -> Message | None:
    """The message if it exists, belongs to ``recipient`` and is in ``tenants``."""
    query = _scoped(select(m).where(m.c.id == message_id, m.c.recipient == recipient), tenants)
    row = (await conn.execute(query)).mappings().first()
    return None if row is None else Message.from_row(row)


async def mark_read(
    conn: AsyncConnection,
    *,
    recipient: str,
    message_id: int,
    now: datetime,
    tenants: list[str] | None = None,
) -> Message | None:
    """Mark ``recipient``'s message read (a second call keeps the first
    ``read_at``); None when there is no such message of theirs."""
    message = await get_message(conn, recipient=recipient, message_id=message_id, tenants=tenants)
    if message is None or message.read_at is not None:
        return message
    await conn.execute(
        update(m).where(m.c.id == message_id, m.c.read_at.is_(None)).values(read_at=now)
    )
    return await get_message(conn, recipient=recipient, message_id=message_id)


async def mark_read_alone(
    db: Database,
    *,
    recipient: str,
    message_id: int,
    now: datetime,
    tenants: list[str] | None = None,
) -> Message | None:
    """:func:`mark_read` in a transaction of its own."""
    async with db.begin() as conn:
        return await mark_read(
            conn, recipient=recipient, message_id=message_id, now=now, tenants=tenants
        )


async def count_unread(conn: AsyncConnection, *, recipient: str) -> int:
    """How many of ``recipient``'s messages are unread."""
    query = (
        select(func.count()).select_from(m).where(m.c.recipient == recipient, m.c.read_at.is_(None))
    )
    return int((await conn.execute(query)).scalar_one())
