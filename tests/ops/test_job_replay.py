"""Conditional replay of dead and failed jobs (SPEC L-24), both backends
unless noted.

Covers: 300 dead jobs replayed at 50/s get runAt exactly ``now + k/50`` s
(spread over 6 s) under one replay batch id; a REAL worker (PostgreSQL, in
process, real clock, default pools) drains such a replay no faster than the
rate; replay is capped at 500 (matched > submitted, oldest first); a
fingerprint filter replays exactly that failure cluster; the preview's
matched / wouldSubmit / samples and every filter of the replay dialog; a
crash midway leaves only whole chunks submitted; bad input names its field.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import select, update

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import metadata
from flowledger.db.schema import workflow_job_executions as executions
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.errors import FlowledgerError
from flowledger.ledger.fingerprint import fingerprint
from flowledger.ledger.models import JobSpec
from flowledger.ops.jobs import batching as job_batching
from flowledger.ops.jobs import replay as job_replay
from flowledger.ops.jobs.filters import JobFilter
from flowledger.ops.jobs.replay import batch_progress, replay, replay_preview
from flowledger.worker import JobContext
from flowledger.worker.worker import Worker
from tests.dbutil import pg_database
from tests.ledger_access import enqueue_many
from tests.runtime_support import TEST_HANDLERS, job_types_for_tests


async def _noop(ctx: JobContext) -> dict[str, Any]:
    return {"ok": True}


NOOP = TEST_HANDLERS.register("ops_replay_noop", _noop).job_type.name


async def dead_jobs(
    db: Database,
    now: datetime,
    n: int,
    *,
    type: str = NOOP,
    error: str | Any = "HTTP 502 from https://erp.example/api/orders/1",
    status: str = "dead",
    **spec: Any,
) -> list[int]:
    """``n`` jobs enqueued at ``now`` and put into ``status`` with ``error``
    (a callable gets the index and returns the job's error)."""
    spec.setdefault("tenant_id", "default")
    async with db.begin() as conn:
        specs = [JobSpec(type=type, **spec) for _ in range(n)]
        ids = await enqueue_many(conn, specs, now=now, job_types=job_types_for_tests())
        for i, job_id in enumerate(ids):
            text = error(i) if callable(error) else error
            await conn.execute(
                update(jobs)
                .where(jobs.c.id == job_id)
                .values(status=status, last_error=text, last_error_fingerprint=fingerprint(text))
            )
    return ids


async def rows(db: Database, ids: list[int] | None = None) -> dict[int, Any]:
    query = select(jobs).order_by(jobs.c.id)
    if ids is not None:
        query = query.where(jobs.c.id.in_(ids))
    async with db.read() as conn:
        return {r.id: r for r in (await conn.execute(query)).all()}


async def test_replay_staggers_300_jobs_at_50_per_second(db: Database, clock: ManualClock) -> None:
    ids = await dead_jobs(db, clock.now(), 300)
    now = clock.advance(seconds=300)
    result = await replay(db, JobFilter(types=(NOOP,)), now=now, rate=50)
    assert (result.matched, result.submitted, result.skipped, result.rate) == (300, 300, 0, 50)
    assert (result.window_from, result.window_to) == (now, now + timedelta(seconds=6))
    replayed = await rows(db, ids)
    for k, job_id in enumerate(ids):  # oldest first: same created_at, so by id
        row = replayed[job_id]
        assert row.run_at == now + timedelta(microseconds=k * 20_000), k
        assert (row.status, row.generation, row.replay_batch_id) == (
            "pending",
            2,
            result.replay_batch_id,
        )
    offsets = sorted((r.run_at - now).total_seconds() for r in replayed.values())
    assert (offsets[0], offsets[-1]) == (0.0, 5.98)
    # never all due at once: 50 per second, whichever second you look at
    assert all(sum(1 for o in offsets if s <= o < s + 1) == 50 for s in range(6))
    progress = await batch_progress(db, result.replay_batch_id or "")
    assert progress == {"pending": 300}


async def test_replay_caps_at_500_and_takes_the_oldest(db: Database, clock: ManualClock) -> None:
    older = await dead_jobs(db, clock.now(), 400)
    newer = await dead_jobs(db, clock.advance(seconds=60), 120, status="failed")
    preview = await replay_preview(db, JobFilter())
    assert (preview.matched, preview.would_submit) == (520, 500)
    result = await replay(db, JobFilter(), now=clock.advance(seconds=1), rate=200)
    assert (result.matched, result.submitted, result.skipped) == (520, 500, 0)
    after = await rows(db)
    assert {after[i].status for i in older + newer[:100]} == {"pending"}
    assert {after[i].status for i in newer[100:]} == {"failed"}  # the 20 newest wait
    again = await replay(db, JobFilter(), now=clock.now(), limit=50)
    assert (again.matched, again.submitted) == (20, 20)


async def test_replaying_a_fingerprint_selects_exactly_that_cluster(
    db: Database, clock: ManualClock
) -> None:
    causes = [
        lambda i: f"timeout after {1000 + i} ms calling https://erp.example/orders/{i}",
        lambda i: f"HTTP 404 from https://crm.example/contacts/{i}?x={i * 7}",
        lambda i: f"customer '{i}' has no e-mail (request {i:08x}-aaaa)",
    ]
    clusters = [await dead_jobs(db, clock.now(), 30, error=cause) for cause in causes]
    fps = [(await rows(db, ids))[ids[0]].last_error_fingerprint for ids in clusters]
    assert len(set(fps)) == 3  # texts differing only in ids and numbers share one
    preview = await replay_preview(db, JobFilter(fingerprint=fps[1]))
    assert (preview.matched, preview.would_submit) == (30, 30)
    result = await replay(db, JobFilter(fingerprint=fps[1]), now=clock.now())
    assert sorted(i.id for i in result.items) == clusters[1]
    batch = (await rows(db)).values()
    assert {r.id for r in batch if r.replay_batch_id == result.replay_batch_id} == set(clusters[1])
    assert {r.status for r in batch if r.id not in clusters[1]} == {"dead"}


async def test_preview_and_every_filter(db: Database, clock: ManualClock) -> None:
    start = clock.now()
    old = await dead_jobs(db, start, 12, type="event_dispatch", instance_id=7, trace_id="t-7")
    mid = await dead_jobs(db, clock.advance(seconds=3600), 3, error="disk quota exceeded")
    failed = await dead_jobs(db, clock.advance(seconds=3600), 2, status="failed")
    theirs = await dead_jobs(db, clock.now(), 4, tenant_id="acme")
    await dead_jobs(db, clock.now(), 5, status="succeeded")  # never replayable
    await dead_jobs(db, clock.now(), 1, tenant_id=None)  # a system job
    mine = ("default",)
    preview = await replay_preview(db, JobFilter(tenants=mine), limit=15)
    assert (preview.matched, preview.would_submit) == (17, 15)
    assert [s["id"] for s in preview.samples] == old[:10]  # first 10, oldest first
    assert set(preview.samples[0]) == {"id", "type", "status", "last_error", "created_at"}
    cases: list[tuple[JobFilter, list[int]]] = [
        (JobFilter(types=("event_dispatch",)), old),
        (JobFilter(instance_id=7), old),
        (JobFilter(trace_id="t-7"), old),
        (JobFilter(keyword="QUOTA"), mid),
        (JobFilter(enqueued_before=start + timedelta(minutes=90)), old + mid),
        (JobFilter(statuses=("failed",)), failed),
        (JobFilter(statuses=("dead",), tenants=("acme",)), theirs),
        (JobFilter(tenants=()), []),
    ]
    for flt, expected in cases:
        got = await replay_preview(
            db, flt if flt.tenants is not None else replace(flt, tenants=mine)
        )
        assert got.matched == len(expected), flt
        assert [s["id"] for s in got.samples] == expected[:10], flt
    everyone = await replay_preview(db, JobFilter())
    assert everyone.matched == 22  # every tenant, system jobs included
    with pytest.raises(FlowledgerError) as caught:
        await replay_preview(db, JobFilter(statuses=("dead", "pending")))
    assert caught.value.field == "statuses"
    with pytest.raises(FlowledgerError) as caught:
        await replay_preview(db, JobFilter(), limit=501)
    assert caught.value.field == "limit"
    with pytest.raises(FlowledgerError) as caught:
        await replay(db, JobFilter(), now=clock.now(), rate=201)
    assert caught.value.field == "rate"


async def test_a_crash_midway_leaves_only_whole_chunks(
    db: Database, clock: ManualClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    ids = await dead_jobs(db, clock.now(), 250)
    real_retry = job_batching.retry_checked  # what job_replay imported, and calls
    calls = 0

    async def crashing_retry(*args: Any, **kw: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 150:
            raise RuntimeError("the process died")
        await real_retry(*args, **kw)

    monkeypatch.setattr(job_replay, "retry_checked", crashing_retry)
    with pytest.raises(RuntimeError, match="the process died"):
        await replay(db, JobFilter(), now=clock.now())
    after = await rows(db, ids)
    submitted = [i for i in ids if after[i].status == "pending"]
    assert submitted == ids[:100]  # the first chunk, whole; nothing of the second
    assert all(after[i].replay_batch_id is not None for i in submitted)
    assert {(after[i].status, after[i].replay_batch_id) for i in ids[100:]} == {("dead", None)}


# ------------------------------------------------ a real worker (PostgreSQL)


@pytest.fixture
async def pg_db() -> AsyncIterator[Database]:
    with pg_database() as url:
        database = Database(url)
        async with database.engine.begin() as conn:
            await conn.run_sync(metadata.create_all)
        try:
            yield database
        finally:
            await database.dispose()


async def test_a_real_worker_drains_a_replay_no_faster_than_its_rate(pg_db: Database) -> None:
    db = pg_db
    ids = await dead_jobs(db, await db.now() - timedelta(hours=1), 300)
    stop = asyncio.Event()
    worker = Worker(db, handlers=TEST_HANDLERS)  # real clock, default pools (4 + 4, 2 s polls)
    running = asyncio.ensure_future(worker.run(stop))
    try:
        await asyncio.wait_for(worker.started.wait(), 10)
        result = await replay(db, JobFilter(types=(NOOP,)), now=await db.now(), rate=50)
        assert result.submitted == 300
        deadline = time.monotonic() + 12
        while (await batch_progress(db, result.replay_batch_id or "")).get("succeeded") != 300:
            assert time.monotonic() < deadline, await batch_progress(
                db, result.replay_batch_id or ""
            )
            await asyncio.sleep(0.2)
    finally:
        stop.set()
        await asyncio.wait_for(running, 40)
    async with db.read() as conn:
        attempts = (
            await conn.execute(
                select(executions.c.scheduled_at, executions.c.started_at).where(
                    executions.c.job_id.in_(ids), executions.c.generation == 2
                )
            )
        ).all()
    assert len(attempts) == 300
    scheduled = sorted(a.scheduled_at for a in attempts)
    planned = (scheduled[-1] - scheduled[0]).total_seconds()
    started = sorted(a.started_at for a in attempts)
    spread = (started[-1] - started[0]).total_seconds()
    print(
        f"replayed 300 at 50/s: planned over {planned:.3f} s, attempts started over {spread:.3f} s"
    )
    # 300 at 50/s are planned over 299/50 s, and no attempt starts before its
    # planned time: the worker drains the batch no faster than its rate (how
    # late a loaded machine starts the first ones does not matter)
    assert planned >= 5.9, planned
    assert all(a.started_at >= a.scheduled_at for a in attempts)
