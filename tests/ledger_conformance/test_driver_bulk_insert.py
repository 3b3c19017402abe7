"""Bulk insert (issue 15 item 5; SPEC L-1, L-8, L-12, L-15) on every driver:
``jobs_insert`` writes exactly the rows ``job_insert`` writes, answers what
one-by-one inserts would answer (idempotencyKeys already in the table or
repeated within the batch give the existing job, ``created=False``), keeps one
row per key under concurrent batches with overlapping keys, sends a bounded
number of statements, and publishes wake hints only after commit."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import psycopg
import pytest
from sqlalchemy import func, select, text
from sqlalchemy.exc import DBAPIError

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.db.wake import WAKE_CHANNEL
from flowledger.ledger.driver import LedgerDriver
from flowledger.ledger.driver.postgres_sql import JSON_INSERT_MAX_ROWS
from flowledger.ledger.models import EnqueueResult, JobSpec
from flowledger.states import Pool
from tests.analytics.test_task_definition_key import statements
from tests.ledger_access import enqueue_many, ledger_of
from tests.ledger_conformance.support import CF_OUT, CF_TYPE, in_tx, job_rows

LEDGER, OUTBOUND = Pool.LEDGER.value, Pool.OUTBOUND.value


def _variety(suffix: str) -> list[JobSpec]:
    """Specs exercising every column a caller may set (and leave unset)."""
    due = datetime(2030, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC)
    return [
        JobSpec(CF_TYPE),
        JobSpec(CF_OUT, payload={"nested": {"list": [1, "two", None]}, "n": 1.5}),
        JobSpec(CF_TYPE, run_at=due, priority=7, max_attempts=9),
        JobSpec(CF_TYPE, delay_ms=1500, execution_timeout_ms=1234),
        JobSpec(
            CF_OUT,
            idempotency_key=f"key-{suffix}",
            operation_key=f"op-{suffix}",
            trace_id=f"trace-{suffix}",
            tenant_id="tenant-a",
            instance_id=41,
            task_id=42,
            node_key="approve",
        ),
        JobSpec(CF_TYPE, payload={"ü": 'ñ ✓ "quoted" {braces}', "back\\slash": ""}),
    ]


@pytest.mark.parametrize("copies", [1, 11], ids=["json-document", "arrays"])
async def test_bulk_rows_equal_single_inserts(
    driver: LedgerDriver, db: Database, clock: ManualClock, copies: int
) -> None:
    # 6 rows go as one JSON document on PostgreSQL, 66 (> JSON_INSERT_MAX_ROWS)
    # as one array per column: both write what a single insert writes
    assert copies * len(_variety("")) > JSON_INSERT_MAX_ROWS or copies == 1
    now = clock.now()
    single = [
        (await in_tx(db, lambda c, s=spec: driver.job_insert(c, s, now=now))).job_id  # type: ignore[misc]
        for spec in _variety("single")
    ]
    specs = [spec for n in range(copies) for spec in _variety(f"bulk{n}")]
    made = await in_tx(db, lambda c: driver.jobs_insert(c, specs, now=now))
    assert all(r.created for r in made)
    bulk = [r.job_id for r in made]
    assert bulk == sorted(bulk) and min(bulk) > max(single)  # new ids ascend in spec order
    rows = await job_rows(db)
    assert len(rows) == len(single) + len(specs)
    generated = {"id", "idempotency_key", "operation_key", "trace_id"}
    for at, many in enumerate(bulk):
        twin, row = rows[single[at % len(single)]], rows[many]
        for column in (c.name for c in jobs.c):
            if column not in generated:
                assert row[column] == twin[column], (column, row[column], twin[column])
        for column in ("operation_key", "trace_id"):  # given, or a fresh random key
            given = twin[column].endswith("-single")
            suffix = f"-bulk{at // len(single)}"
            assert row[column].endswith(suffix) if given else len(row[column]) == 32
    assert rows[bulk[4]]["idempotency_key"] == "key-bulk0"
    assert rows[bulk[2]]["run_at"] == datetime(2030, 1, 2, 3, 4, 5, 678_000, tzinfo=UTC)
    assert rows[bulk[3]]["run_at"] == now + timedelta(milliseconds=1500)
    assert len({rows[i]["operation_key"] for i in bulk}) == len(bulk)


async def test_bulk_idempotency_keys_answer_as_one_by_one(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    now = clock.now()
    old = await in_tx(
        db, lambda c: driver.job_insert(c, JobSpec(CF_TYPE, idempotency_key="k1"), now=now)
    )
    keys = ["k1", "k2", None, "k2", "k3", None, "k1", "k3"]
    specs = [JobSpec(CF_TYPE, idempotency_key=k, payload={"i": i}) for i, k in enumerate(keys)]
    with statements(db) as seen:
        made = await in_tx(db, lambda c: driver.jobs_insert(c, specs, now=now))
    assert [r.created for r in made] == [False, True, True, False, True, True, False, False]
    assert made[0].job_id == made[6].job_id == old.job_id
    assert made[3].job_id == made[1].job_id and made[7].job_id == made[4].job_id
    rows = await job_rows(db)
    assert len(rows) == 5  # k1 (old), k2, k3 and the two without a key
    for result, spec in zip(made, specs, strict=True):
        if result.created:
            assert rows[result.job_id]["payload"] == spec.payload  # the first spec of a key wins
    assert rows[old.job_id]["payload"] == {}
    inserts = [s for s in seen if s.lstrip().upper().startswith(("INSERT", "WITH"))]
    assert len(inserts) == 1  # one insert, one key look-up, at most a hint per pool
    assert len(seen) <= 3

    # the same batch again: nothing written, the same answer, and no wake hint
    hinted = db.hub.subscribe(LEDGER)
    again = await in_tx(db, lambda c: driver.jobs_insert(c, specs[:2] + specs[3:5], now=now))
    assert [r.job_id for r in again] == [
        made[0].job_id,
        made[1].job_id,
        made[3].job_id,
        made[4].job_id,
    ]
    assert not any(r.created for r in again)
    assert not hinted.is_set()
    assert len(await job_rows(db)) == 5
    assert await in_tx(db, lambda c: driver.jobs_insert(c, [], now=now)) == []


async def test_bulk_insert_statement_count_is_bounded(
    driver: LedgerDriver, db: Database, clock: ManualClock, driver_kind: str
) -> None:
    n = 2500
    specs = [JobSpec(CF_TYPE if i % 2 else CF_OUT) for i in range(n)]
    with statements(db) as seen:
        made = await in_tx(db, lambda c: driver.jobs_insert(c, specs, now=clock.now()))
    assert len({r.job_id for r in made}) == n and all(r.created for r in made)
    inserts = [s for s in seen if "workflow_jobs" in s]
    # PostgreSQL: one unnest statement; SQLite and Core: multi-row inserts of 1,000
    unnest = driver_kind in ("postgresql", "postgresql-fast")
    assert len(inserts) == (1 if unnest else 3)
    # the wake hints of both pools: inside the unnest statement (SPEC L-8;
    # issue 15 item 2), one pg_notify statement per pool on the portable Core
    # over PostgreSQL, none on SQLite (in-process after commit)
    notifies = [s for s in seen if s.lstrip().upper().startswith("SELECT PG_NOTIFY")]
    assert len(notifies) == {"postgresql-core": 2}.get(driver_kind, 0)
    if unnest:
        assert seen == inserts  # nothing else: the hints rode on the insert
    if unnest:  # two texts, each the same for any row count: psycopg prepares each once
        texts = []
        for size in (100, 7, 3, JSON_INSERT_MAX_ROWS + 1, JSON_INSERT_MAX_ROWS):
            with statements(db) as again:
                await in_tx(db, lambda c, k=size: driver.jobs_insert(c, specs[:k], now=clock.now()))  # type: ignore[misc]
            (text_of,) = [s for s in again if "workflow_jobs" in s]
            texts.append(text_of)
        arrays, document = inserts[0], texts[1]
        assert texts == [arrays, document, document, arrays, document]
        assert "unnest(" in arrays and "json_to_recordset(" in document


async def _wait_until_blocked(db: Database) -> None:
    """Until another backend waits for a lock (PostgreSQL); on SQLite the
    second writer queues on the process's write lock at once."""
    if db.is_sqlite:
        await asyncio.sleep(0.05)
        return
    query = text("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
    for _ in range(500):
        async with db.read() as conn:
            if (await conn.execute(query)).scalar_one():
                return
        await asyncio.sleep(0.01)
    raise AssertionError("the second batch never waited")


async def test_concurrent_bulk_inserts_keep_one_row_per_key(
    driver: LedgerDriver, db: Database, clock: ManualClock
) -> None:
    now = clock.now()
    first = [JobSpec(CF_TYPE, idempotency_key=f"c{i:03}") for i in range(60)]
    second = [JobSpec(CF_TYPE, idempotency_key=f"c{i:03}") for i in reversed(range(30, 90))]
    second += [JobSpec(CF_TYPE) for _ in range(5)]
    inserted = asyncio.Event()
    release = asyncio.Event()

    async def hold_first() -> list[EnqueueResult]:
        async with db.begin() as conn:
            made = await driver.jobs_insert(conn, first, now=now)
            inserted.set()
            await release.wait()  # commit only once the second batch waits on our keys
        return made

    async def run_second() -> list[EnqueueResult]:
        await inserted.wait()
        return await in_tx(db, lambda c: driver.jobs_insert(c, second, now=now))

    holder, other = asyncio.create_task(hold_first()), asyncio.create_task(run_second())
    await inserted.wait()
    await _wait_until_blocked(db)
    release.set()
    a, b = await holder, await other
    assert all(r.created for r in a)
    by_key = {s.idempotency_key: r.job_id for s, r in zip(first, a, strict=True)}
    for spec, result in zip(second, b, strict=True):
        key = spec.idempotency_key
        if key is not None and key in by_key:
            assert (result.job_id, result.created) == (by_key[key], False)
        else:
            assert result.created
    async with db.read() as conn:
        per_key = (
            await conn.execute(
                select(func.count(), func.count(jobs.c.idempotency_key.distinct()))
                .select_from(jobs)
                .where(jobs.c.idempotency_key.is_not(None))
            )
        ).one()
    assert tuple(per_key) == (90, 90)
    assert len(await job_rows(db)) == 95


async def test_crossed_batches_do_not_deadlock(
    driver: LedgerDriver, db: Database, clock: ManualClock, driver_kind: str
) -> None:
    """A holds x; B inserts [y, x]; A then inserts y. In input order B would
    hold y while waiting for x — a deadlock; in key order B waits for x first
    and holds nothing A needs."""
    if driver_kind not in ("postgresql", "postgresql-fast"):
        pytest.skip("row locks between open transactions: the PostgreSQL driver's property")
    now = clock.now()
    holding, release = asyncio.Event(), asyncio.Event()

    def spec(key: str) -> JobSpec:
        return JobSpec(CF_TYPE, idempotency_key=key)

    async def a() -> list[EnqueueResult]:
        async with db.begin() as conn:
            made = await driver.jobs_insert(conn, [spec("x")], now=now)
            holding.set()
            await release.wait()
            return made + await driver.jobs_insert(conn, [spec("y")], now=now)

    task_a = asyncio.create_task(a())
    await holding.wait()
    task_b = asyncio.create_task(
        in_tx(db, lambda c: driver.jobs_insert(c, [spec("y"), spec("x")], now=now))
    )
    await _wait_until_blocked(db)
    release.set()
    made_a, made_b = await asyncio.wait_for(task_a, 10), await asyncio.wait_for(task_b, 10)
    assert [r.created for r in made_a] == [True, True]
    assert [(r.job_id, r.created) for r in made_b] == [
        (made_a[1].job_id, False),
        (made_a[0].job_id, False),
    ]


async def test_bulk_wake_hints_only_after_commit(
    driver: LedgerDriver, db: Database, db_url: str, clock: ManualClock
) -> None:
    now = clock.now()
    ledger, outbound = db.hub.subscribe(LEDGER), db.hub.subscribe(OUTBOUND)
    specs = [JobSpec(CF_TYPE), JobSpec(CF_OUT), JobSpec(CF_TYPE)]
    with pytest.raises(RuntimeError):
        async with db.begin() as conn:
            await driver.jobs_insert(conn, specs, now=now)
            raise RuntimeError("the caller's business check failed")
    assert not ledger.is_set() and not outbound.is_set()
    assert await job_rows(db) == {}
    listener = None
    if not db.is_sqlite:
        listener = await psycopg.AsyncConnection.connect(db_url, autocommit=True)
        await listener.execute(f"LISTEN {WAKE_CHANNEL}")
    try:
        async with db.begin() as conn:
            await driver.jobs_insert(conn, specs, now=now)
            assert not ledger.is_set() and not outbound.is_set()
            if listener is not None:
                early = [n async for n in listener.notifies(timeout=0.2)]
                assert early == []
        assert ledger.is_set() and outbound.is_set()
        if listener is not None:
            received = [n async for n in listener.notifies(timeout=5.0, stop_after=2)]
            assert sorted(n.payload for n in received) == [LEDGER, OUTBOUND]  # one per pool
            await listener.execute("SELECT pg_notify(%s, 'marker')", (WAKE_CHANNEL,))
            rest = [n async for n in listener.notifies(timeout=5.0, stop_after=1)]
            assert [n.payload for n in rest] == ["marker"]
    finally:
        if listener is not None:
            await listener.close()


@pytest.mark.parametrize("pad", [0, JSON_INSERT_MAX_ROWS], ids=["json-document", "arrays"])
async def test_bulk_refuses_what_a_single_insert_refuses(
    driver: LedgerDriver, db: Database, clock: ManualClock, pad: int
) -> None:
    others = [JobSpec(CF_TYPE) for _ in range(pad)]  # past the limit: the array text
    naive = JobSpec(CF_TYPE, run_at=datetime(2030, 1, 1))
    with pytest.raises(Exception, match="naive datetimes"):
        await in_tx(
            db, lambda c: driver.jobs_insert(c, [JobSpec(CF_TYPE), *others, naive], now=clock.now())
        )
    if not db.is_sqlite:  # SQLite does not enforce VARCHAR lengths
        too_long = JobSpec(CF_TYPE, idempotency_key="k" * 256)
        with pytest.raises(DBAPIError, match="too long"):
            await in_tx(db, lambda c: driver.jobs_insert(c, [*others, too_long], now=clock.now()))
    assert await job_rows(db) == {}


async def test_public_enqueue_bulk_and_enqueue_many(
    db: Database, clock: ManualClock, driver_kind: str
) -> None:
    if driver_kind not in ("sqlite", "postgresql"):
        pytest.skip("the public functions pick the database's own driver")
    now = clock.now()
    async with db.begin() as conn:
        made = await ledger_of(conn).jobs_insert(
            conn, [JobSpec(CF_TYPE, idempotency_key="p1"), JobSpec(CF_OUT)], now=now
        )
        ids = await enqueue_many(
            conn, [JobSpec(CF_TYPE, idempotency_key="p1"), JobSpec(CF_TYPE)], now=now
        )
    assert [r.created for r in made] == [True, True]
    assert ids[0] == made[0].job_id and ids[1] not in {r.job_id for r in made}
    rows = await job_rows(db)
    assert sorted(rows) == sorted([made[0].job_id, made[1].job_id, ids[1]])
    assert rows[made[1].job_id]["pool"] == OUTBOUND
