"""In-app messages (SPEC X-7) on both backends: post in the caller's
transaction, list my messages (keyset paged, unread filter), mark read."""

from __future__ import annotations

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.notify.messages import count_unread, list_messages, mark_read, post_message


async def test_post_list_and_mark_read(db: Database, clock: ManualClock) -> None:
    async with db.begin() as conn:
        ids = [
            await post_message(
                conn,
                tenant="default",
                recipient="mia",
                title=f"task {n}",
                body="please approve",
                kind="task_assigned",
                link=f"/tasks/{n}",
                now=clock.now(),
            )
            for n in range(3)
        ]
        await post_message(
            conn,
            tenant="default",
            recipient="max",
            title="x",
            body="y",
            kind="alert",
            now=clock.now(),
        )
    async with db.read() as conn:
        first = await list_messages(conn, recipient="mia", limit=2)
        assert [m.id for m in first.items] == [ids[2], ids[1]]
        assert first.next_after == ids[1]
        rest = await list_messages(conn, recipient="mia", limit=2, after_id=first.next_after)
        assert [m.id for m in rest.items] == [ids[0]]
        assert rest.next_after is None
        assert rest.items[0].link == "/tasks/0" and rest.items[0].read_at is None

    clock.advance(seconds=60)
    read_at = clock.now()
    async with db.begin() as conn:
        marked = await mark_read(conn, recipient="mia", message_id=ids[1], now=read_at)
        assert marked is not None and marked.read_at == read_at
        clock.advance(seconds=60)
        again = await mark_read(conn, recipient="mia", message_id=ids[1], now=clock.now())
        assert again is not None and again.read_at == read_at  # first read kept
        assert await mark_read(conn, recipient="max", message_id=ids[0], now=clock.now()) is None
    async with db.read() as conn:
        unread = await list_messages(conn, recipient="mia", unread_only=True)
        assert [m.id for m in unread.items] == [ids[2], ids[0]]
        assert await count_unread(conn, recipient="mia") == 2
        assert await count_unread(conn, recipient="max") == 1
        other = await list_messages(conn, recipient="mia", tenants=["acme"])
        assert other.items == []


async def test_post_rolls_back_with_the_callers_transaction(
    db: Database, clock: ManualClock
) -> None:
    class Boom(Exception):
        pass

    try:
        async with db.begin() as conn:
            await post_message(
                conn,
                tenant="default",
                recipient="mia",
                title="t",
                body="b",
                kind="k",
                now=clock.now(),
            )
            raise Boom
    except Boom:
        pass
    async with db.read() as conn:
        assert (await list_messages(conn, recipient="mia")).items == []
