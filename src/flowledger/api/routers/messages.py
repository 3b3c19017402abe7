"""In-app messages (SPEC X-7): "my messages". Any valid token reads and
marks its own user's messages (in the tenants the token sees); another
user's message does not exist for the caller (404)."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Self

from fastapi import APIRouter, Path, Query

from flowledger.api.auth import CurrentCaller
from flowledger.api.deps import Ctx
from flowledger.api.pagination import Cursor, Limit, cursor_for, decode_cursor
from flowledger.api.route_access import AUTHENTICATED, GuardedRoute
from flowledger.api.schemas import MAX_ID, ApiModel
from flowledger.errors import NotFoundError
from flowledger.notify import messages

# every caller reads and marks only its own messages
router = APIRouter(
    prefix="/messages", tags=["messages"], route_class=GuardedRoute, dependencies=[AUTHENTICATED]
)


MessageId = Annotated[int, Path(alias="messageId", ge=1, le=MAX_ID)]


class MessageNotFound(NotFoundError):
    code = "message_not_found"


class MessagePublic(ApiModel):
    id: int
    tenant_id: str
    title: str
    body: str
    link: str | None = None
    kind: str
    read: bool
    read_at: datetime | None = None
    created_at: datetime

    @classmethod
    def of(cls, message: messages.Message) -> Self:
        return cls(
            id=message.id,
            tenant_id=message.tenant_id,
            title=message.title,
            body=message.body,
            link=message.link,
            kind=message.kind,
            read=message.read_at is not None,
            read_at=message.read_at,
            created_at=message.created_at,
        )


class MessagePage(ApiModel):
    items: list[MessagePublic]
    next: str | None = None


@router.get("", response_model=MessagePage)
async def list_messages(
    ctx: Ctx,
    caller: CurrentCaller,
    unread: Annotated[bool, Query(description="Only messages not yet read.")] = False,
    limit: Limit = 50,
    cursor: Cursor = None,
) -> MessagePage:
    """The caller's messages, newest first."""
    after = decode_cursor(cursor, (int,))
    async with ctx.db.read() as conn:
        page = await messages.list_messages(
            conn,
            recipient=caller.user_id,
            tenants=caller.tenant_scope,
            unread_only=unread,
            after_id=None if after is None else after[0],
            limit=limit,
        )
    key = None if page.next_after is None else [page.next_after]
    return MessagePage(items=[MessagePublic.of(m) for m in page.items], next=cursor_for(key))


@router.post("/{messageId}/read", response_model=MessagePublic)
async def mark_message_read(
    message_id: MessageId, ctx: Ctx, caller: CurrentCaller
) -> MessagePublic:
    """Mark one of the caller's messages read (again: no change)."""
    message = await messages.mark_read_alone(
        ctx.db,
        recipient=caller.user_id,
        message_id=message_id,
        now=ctx.now(),
        tenants=caller.tenant_scope,
    )
    if message is None:
        raise MessageNotFound(f"message {message_id} not found", field="messageId")
    return MessagePublic.of(message)
