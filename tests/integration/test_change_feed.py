"""The database's change feed (issue 33 item 2) on both backends: a burst of
settled jobs leaves as one coalesced delivery per window (on PostgreSQL one
NOTIFY, received by a subscriber of another Database object — another
process's view), too many instances become "some instances", and NOTIFY
payloads stay under PostgreSQL's 8000-byte limit."""

from __future__ import annotations

import asyncio

from flowledger.db.change_feed import COALESCE_S
from flowledger.db.changes import MAX_INSTANCE_IDS, MAX_PAYLOAD, Change, decode, encode
from flowledger.db.database import Database


async def _drain(queue: asyncio.Queue[Change], within: float) -> list[Change]:
    got: list[Change] = []
    loop = asyncio.get_running_loop()
    end = loop.time() + within
    while (left := end - loop.time()) > 0:
        try:
            async with asyncio.timeout(left):
                got.append(await queue.get())
        except TimeoutError:
            break
    return got


async def test_a_burst_of_settlements_is_one_coalesced_delivery(db: Database, db_url: str) -> None:
    listener_db = db if db.is_sqlite else Database(db_url)  # PostgreSQL: across "processes"
    try:
        async with listener_db.changes.subscribe() as subscription:
            settled = [("default", i, False) for i in range(1, 31)]
            settled += [("default", None, True), ("acme", None, False)]
            for tenant, instance_id, failed in settled:  # job after job within one window
                db.changes.job_settled(tenant, instance_id, failed)
            got = await _drain(subscription.queue, COALESCE_S + 1.0)
    finally:
        if listener_db is not db:
            await listener_db.dispose()
    assert sorted(got, key=lambda c: (c.topic, c.tenant or "")) == [
        Change("health", "default"),
        Change("instances", "default", tuple(range(1, 31))),
        Change("jobs", "acme"),
        Change("jobs", "default"),
    ]


async def test_too_many_instances_become_some_instances(db: Database) -> None:
    async with db.changes.subscribe() as subscription:
        for i in range(1, MAX_INSTANCE_IDS + 2):
            db.changes.job_settled("t", i, False)
        got = await _drain(subscription.queue, COALESCE_S + 0.5)
    assert Change("instances", "t", ()) in got


def test_payloads_stay_under_the_notify_limit() -> None:
    changes = [Change("instances", f"tenant-{n:04d}", tuple(range(50))) for n in range(100)]
    payloads = encode(changes)
    assert len(payloads) > 1
    assert all(len(p.encode()) < MAX_PAYLOAD for p in payloads)
    assert [c for p in payloads for c in decode(p)] == changes
    assert decode("not json") == []
    assert decode('[["unknown-topic", null, []]]') == []
