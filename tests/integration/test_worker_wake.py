"""Wake hints reaching a worker (SPEC L-8).

The worker polls only every 30 s here, so a job executed within 2 s proves a
wake hint woke it. Two channels, each tested alone on both backends:
``in_process`` — the enqueuer shares the worker's Database, the hint travels
through the in-process hub (the worker does not listen); ``cross_process`` —
the enqueuer is another Database (as another process would be), the hint
travels through LISTEN/NOTIFY on PostgreSQL and the ``PRAGMA data_version``
watcher on SQLite.

Covers: a committed enqueue wakes an idle worker, which executes the job
within 2 s (L-8); a rolled-back enqueue publishes nothing — no hub signal, no
NOTIFY (checked against an ordered NOTIFY barrier), no change of the SQLite
data_version — and the worker claims nothing (L-8).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.clock import ManualClock
from flowledger.db import wake
from flowledger.db.database import Database
from flowledger.db.schema import system_leader_leases as leases
from flowledger.ledger.models import JobSpec
from flowledger.worker.context import JobContext
from tests.integration.worker_helpers import (
    LEDGER,
    SCRIPTED,
    Running,
    add_scripted,
    behave,
    count_attempts,
    running_worker,
    wait_job,
    wait_until,
)
from tests.ledger_access import ledger_of

CHANNELS = ["in_process", "cross_process"]


async def done(ctx: JobContext) -> Any:
    return {"woken": True}


@pytest.fixture
async def other_db(db: Database, db_url: str) -> AsyncIterator[Database]:
    """A second Database on the same database: what another process would have."""
    other = Database(db_url)
    try:
        yield other
    finally:
        await other.dispose()


async def poke_from(other: Database, clock: ManualClock) -> None:
    """Commit a write with a ledger-pool hint through ``other``'s own channel."""
    async with other.begin() as conn:
        await conn.execute(
            leases.insert().values(name=uuid.uuid4().hex, holder="test", lease_until=clock.now())
        )
        await wake.hint(conn, LEDGER)


@asynccontextmanager
async def idle_worker(
    db: Database, other: Database, clock: ManualClock, channel: str
) -> AsyncIterator[Running]:
    """A worker polling every 30 s that has made its first claims, and — for the
    cross-process channel — has been woken once through that channel."""
    async with running_worker(
        db, clock, poll_interval_s=30.0, run_drain=False, listen=channel == "cross_process"
    ) as run:
        await wait_until(
            lambda: all(p.claims >= 1 for p in run.worker.pools), what="the first claims"
        )
        if channel == "cross_process":  # the listener may still be connecting
            pool = run.worker.pools[0]
            for _ in range(20):
                before = pool.claims
                await poke_from(other, clock)
                try:
                    await wait_until(lambda: pool.claims > before, within=0.5)  # noqa: B023
                    break
                except AssertionError:
                    continue
            else:
                raise AssertionError("the worker never woke through the cross-process channel")
        yield run


async def quiet(probe: asyncio.Event) -> None:
    """Wait until no wake hint has arrived for 0.25 s (start-up hints are over)."""
    for _ in range(20):
        probe.clear()
        await asyncio.sleep(0.25)
        if not probe.is_set():
            return
    raise AssertionError("wake hints keep arriving")


async def data_version(conn: AsyncConnection) -> int:
    """SQLite's commit counter as seen by ``conn`` (changes when others commit)."""
    async with conn.begin():  # deferred (read-only connection): takes no lock
        return int((await conn.exec_driver_sql("PRAGMA data_version")).scalar_one())


@pytest.mark.parametrize("channel", CHANNELS)
async def test_committed_enqueue_wakes_an_idle_worker_L8(
    channel: str, db: Database, other_db: Database, clock: ManualClock
) -> None:
    source = db if channel == "in_process" else other_db
    async with idle_worker(db, other_db, clock, channel) as run:
        assert await count_attempts(db) == 0
        job_id = await add_scripted(source, clock, done)
        row = await wait_job(db, job_id, "succeeded", within=2.0)
        assert row.result == {"woken": True}
        assert run.worker.config.poll_interval_s == 30.0


class Rollback(Exception):
    pass


@pytest.mark.parametrize("channel", CHANNELS)
async def test_rolled_back_enqueue_never_wakes_the_worker_L8(
    channel: str, db: Database, other_db: Database, clock: ManualClock
) -> None:
    source = db if channel == "in_process" else other_db
    async with idle_worker(db, other_db, clock, channel) as run:
        pool = run.worker.pools[0]
        probe = db.hub.subscribe(LEDGER)  # set by every hint this process receives
        watch = await db.engine.connect()
        await watch.execution_options(flowledger_readonly=True)
        try:
            await quiet(probe)
            claims = pool.claims
            version = await data_version(watch) if db.is_sqlite else None
            with pytest.raises(Rollback):
                async with source.begin() as conn:
                    await ledger_of(conn).job_insert(
                        conn, JobSpec(type=SCRIPTED, payload=behave(done)), now=clock.now()
                    )
                    raise Rollback
            assert not probe.is_set()  # the in-process hub is signalled synchronously
            if channel == "cross_process" and not db.is_sqlite:
                # NOTIFYs arrive in commit order: once a later one has arrived,
                # one from the rolled-back transaction would have arrived too.
                marker = f"wt-barrier-{uuid.uuid4().hex[:8]}"
                barrier = db.hub.subscribe(marker)
                async with other_db.begin() as conn:
                    await conn.execute(
                        text("SELECT pg_notify(:channel, :pool)"),
                        {"channel": wake.WAKE_CHANNEL, "pool": marker},
                    )
                await wait_until(barrier.is_set, within=2.0, what="the NOTIFY barrier")
                db.hub.unsubscribe(marker, barrier)
            if db.is_sqlite:
                # nothing was committed, so the watcher has nothing to notice
                assert await data_version(watch) == version
                if channel == "cross_process":
                    await asyncio.sleep(0.3)  # six watcher intervals: absence needs a window
            assert not probe.is_set()
            assert pool.claims == claims
            assert await count_attempts(db) == 0
            # control: the same channel does wake this worker for a committed enqueue
            job_id = await add_scripted(source, clock, done)
            await wait_job(db, job_id, "succeeded", within=2.0)
            assert probe.is_set()
            if db.is_sqlite:  # the check above would have seen the commit
                assert await data_version(watch) != version
        finally:
            await watch.close()
            db.hub.unsubscribe(LEDGER, probe)


async def test_a_job_due_later_starts_on_time_not_at_the_next_poll_L6(db: Database) -> None:
    """With a 30 s poll and no hint, a job enqueued due in 0.4 s starts when it
    falls due (the pool sleeps until the earliest due time), never early."""
    from datetime import timedelta

    from flowledger.clock import SystemClock
    from tests.integration.ledger_helpers import attempt_rows

    clock = SystemClock()
    async with running_worker(
        db,
        clock,
        poll_interval_s=30.0,
        run_drain=False,
        listen=False,
    ) as run:
        await wait_until(
            lambda: all(p.claims >= 1 for p in run.worker.pools), what="the first claims"
        )
        enqueued_at = clock.now()
        job_id = await add_scripted(db, clock, done, delay_ms=400)
        await wait_job(db, job_id, "succeeded", within=3.0)
    (attempt,) = await attempt_rows(db, job_id)
    assert attempt.started_at >= enqueued_at + timedelta(milliseconds=400)
    assert attempt.started_at <= enqueued_at + timedelta(milliseconds=1500)


async def test_a_job_due_later_starts_on_time_while_the_pool_runs_others_L6(
    db: Database,
) -> None:
    """With a 30 s poll and no further hint, a job due in 0.4 s that arrives
    together with a long-running job — one claim takes the long job, leaves
    a slot free and must still know the delayed job's due time — starts when
    it falls due, never early, while the long job still runs."""
    from datetime import timedelta

    from flowledger.clock import SystemClock
    from tests.integration.ledger_helpers import attempt_rows

    clock = SystemClock()
    release = asyncio.Event()

    async def long_running(ctx: JobContext) -> Any:
        await release.wait()
        return {"long": True}

    async with running_worker(
        db, clock, poll_interval_s=30.0, run_drain=False, listen=False
    ) as run:
        await wait_until(
            lambda: all(p.claims >= 1 for p in run.worker.pools), what="the first claims"
        )
        enqueued_at = clock.now()
        async with db.begin() as conn:  # one commit, one hint: one claim sees both
            long_id = (
                await ledger_of(conn).job_insert(
                    conn, JobSpec(type=SCRIPTED, payload=behave(long_running)), now=enqueued_at
                )
            ).job_id
            delayed_id = (
                await ledger_of(conn).job_insert(
                    conn,
                    JobSpec(type=SCRIPTED, payload=behave(done), delay_ms=400),
                    now=enqueued_at,
                )
            ).job_id
        await wait_job(db, delayed_id, "succeeded", within=3.0)
        (long_job,) = await attempt_rows(db, long_id)
        assert long_job.finished_at is None  # the pool was busy with it throughout
        release.set()
        await wait_job(db, long_id, "succeeded", within=3.0)
    (attempt,) = await attempt_rows(db, delayed_id)
    assert attempt.started_at >= enqueued_at + timedelta(milliseconds=400)
    assert attempt.started_at <= enqueued_at + timedelta(milliseconds=1500)
