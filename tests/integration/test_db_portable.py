"""The dialect-dispatching building blocks of ``db/`` (issue 16: no dialect
branch outside ``db/``) give the same answers on SQLite and PostgreSQL:
the constructs of :mod:`flowledger.db.portable`, the aggregates of
:mod:`flowledger.db.aggregates` and the planner settings of
:mod:`flowledger.db.planner`. Each runs once per backend on a probe table
of its own."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo

import pytest
from sqlalchemy import Column, Integer, MetaData, String, Table, func, select, text

from flowledger.db.aggregates import (
    count_by_local_day,
    distinct_json_keys,
    grouped_stats,
    interval_percentiles,
)
from flowledger.db.database import Database
from flowledger.db.planner import set_local
from flowledger.db.portable import (
    in_batch,
    json_text_contains,
    milliseconds_between,
    seconds_between,
    timestamp_minus,
)
from flowledger.db.types import JsonType, UTCDateTime

probe_metadata = MetaData()
probe = Table(
    "portable_probe",
    probe_metadata,
    Column("id", Integer, primary_key=True),
    Column("grp", String(10), nullable=False),
    Column("a", UTCDateTime, nullable=False),
    Column("b", UTCDateTime, nullable=False),
    Column("doc", JsonType, nullable=False),
)
T0 = datetime(2026, 3, 28, 22, 0, tzinfo=UTC)


@pytest.fixture
async def probe_db(db: Database) -> AsyncIterator[Database]:
    async with db.begin() as conn:
        await conn.run_sync(probe_metadata.create_all)
    yield db


async def _insert(db: Database, rows: list[dict[str, Any]]) -> None:
    async with db.begin() as conn:
        await conn.execute(probe.insert(), rows)


def _row(n: int, grp: str, a: datetime, b: datetime, doc: Any = None) -> dict[str, Any]:
    return {"id": n, "grp": grp, "a": a, "b": b, "doc": {} if doc is None else doc}


async def test_durations_between_timestamps(probe_db: Database) -> None:
    await _insert(probe_db, [_row(1, "x", T0, T0 + timedelta(hours=2, milliseconds=1250))])
    p = probe.c
    async with probe_db.read() as conn:
        ms, s = (
            await conn.execute(select(milliseconds_between(p.a, p.b), seconds_between(p.a, p.b)))
        ).one()
        # the construct composes with operators (it renders in parentheses)
        doubled = (await conn.execute(select(2 * seconds_between(p.a, p.b) - 1))).scalar_one()
    assert round(ms) == 7_201_250
    assert round(s, 3) == 7201.25
    assert round(doubled, 3) == 14401.5


async def test_timestamp_minus_a_delta(probe_db: Database) -> None:
    hour = timedelta(hours=1)
    await _insert(
        probe_db,
        [
            _row(1, "x", T0, T0 - hour),  # exactly an hour earlier: included
            _row(2, "x", T0, T0 - hour - timedelta(seconds=1)),  # a second more: not
            _row(3, "x", T0, T0 - timedelta(minutes=5)),
        ],
    )
    p = probe.c
    async with probe_db.read() as conn:
        ids = (
            await conn.execute(select(p.id).where(p.b >= timestamp_minus(p.a, hour)).order_by(p.id))
        ).scalars()
        assert list(ids) == [1, 3]
        # another delta through the same (cached) statement shape
        ten = timedelta(minutes=10)
        ids = (
            await conn.execute(select(p.id).where(p.b >= timestamp_minus(p.a, ten)).order_by(p.id))
        ).scalars()
        assert list(ids) == [3]


async def test_json_text_contains_literally_and_case_insensitively(probe_db: Database) -> None:
    docs = [
        {"name": "Café Crème"},  # non-ASCII: SQLite stores it escaped
        {"note": "100% sure"},
        {"note": "100 percent"},
        {"under": "a_b"},
        {"under": "axb"},
    ]
    await _insert(probe_db, [_row(n, "x", T0, T0, d) for n, d in enumerate(docs, 1)])

    async def matching(keyword: str) -> list[int]:
        async with probe_db.read() as conn:
            query = select(probe.c.id).where(
                probe.c.id > 0, json_text_contains(probe.c.doc, keyword)
            )
            return list((await conn.execute(query.order_by(probe.c.id))).scalars())

    assert await matching("café") == [1]
    assert await matching("Crème") == [1]
    assert await matching("0%") == [2]
    assert await matching("a_b") == [4]
    assert await matching("note") == [2, 3]
    assert await matching("nothing") == []


async def test_grouped_stats_and_interval_percentiles(probe_db: Database) -> None:
    rows = [_row(n, "x", T0, T0 + timedelta(seconds=n)) for n in range(1, 11)]
    rows += [_row(20 + n, "y", T0, T0 + timedelta(seconds=10 * n)) for n in range(1, 3)]
    await _insert(probe_db, rows)
    p = probe.c
    async with probe_db.read() as conn:
        stats = await grouped_stats(conn, [p.grp], seconds_between(p.a, p.b), [], probe)
        p50, p90 = await interval_percentiles(conn, p.a, p.b, p.grp == "x", (0.5, 0.9))
        none = await interval_percentiles(conn, p.a, p.b, p.grp == "z", (0.5,))
    n, mean, p90x = stats[("x",)]
    assert (n, round(mean or 0, 3), round(p90x or 0, 3)) == (10, 5.5, 9.1)
    n, mean, p90y = stats[("y",)]
    assert (n, round(mean or 0, 3), round(p90y or 0, 3)) == (2, 15.0, 19.0)
    assert (round(p50 or 0, 3), round(p90 or 0, 3)) == (5500.0, 9100.0)
    assert none == [None]


async def test_grouped_stats_over_the_groups_of_an_index(probe_db: Database) -> None:
    """With ``groups_where`` (on PostgreSQL the groups are then walked and
    each aggregated on its own) the numbers are those of the plain
    grouping, and a group none of whose rows meets ``where`` is left out."""
    rows = [_row(n, "x", T0, T0 + timedelta(seconds=n)) for n in range(1, 11)]
    rows += [_row(20 + n, "y", T0, T0 + timedelta(seconds=10 * n)) for n in range(1, 3)]
    rows += [_row(30, "w", T0, T0 + timedelta(seconds=7)), _row(31, "z", T0, T0)]
    await _insert(probe_db, rows)
    p = probe.c
    value = seconds_between(p.a, p.b)
    where = [p.id > 1, p.id != 31, p.grp != "w"]
    async with probe_db.read() as conn:
        plain = await grouped_stats(conn, [p.grp], value, where, probe)
        walked = await grouped_stats(
            conn, [p.grp], value, where, probe, groups_where=[p.grp != "w"]
        )
        everything = await grouped_stats(conn, [p.grp], value, [], probe, groups_where=[])
    assert walked == plain
    assert sorted(walked) == [("x",), ("y",)]
    n, mean, p90 = walked[("x",)]
    assert (n, round(mean or 0, 3), round(p90 or 0, 3)) == (9, 6.0, 9.2)
    assert sorted(everything) == [("w",), ("x",), ("y",), ("z",)]
    assert everything[("z",)] == (1, 0.0, 0.0)


async def test_count_by_local_day_across_a_dst_change(probe_db: Database) -> None:
    zone = ZoneInfo("Europe/Paris")  # clocks go forward on 2026-03-29 at 02:00
    start = datetime(2026, 3, 28, tzinfo=zone).astimezone(UTC)
    end = datetime(2026, 3, 31, tzinfo=zone).astimezone(UTC)
    local = [
        datetime(2026, 3, 28, 0, 0, tzinfo=zone),  # the first local midnight
        datetime(2026, 3, 28, 23, 59, tzinfo=zone),
        datetime(2026, 3, 29, 0, 0, tzinfo=zone),  # exactly midnight: the 29th
        datetime(2026, 3, 29, 23, 30, tzinfo=zone),  # UTC+2 now: 21:30 UTC
        datetime(2026, 3, 30, 0, 15, tzinfo=zone),  # 22:15 UTC on the 29th
        datetime(2026, 3, 31, 0, 0, tzinfo=zone),  # the end: excluded
    ]
    await _insert(probe_db, [_row(n, "x", t, t) for n, t in enumerate(local, 1)])
    async with probe_db.read() as conn:
        counts = await count_by_local_day(conn, probe.c.a, [], zone=zone, start=start, end=end)
    assert counts == {date(2026, 3, 28): 2, date(2026, 3, 29): 2, date(2026, 3, 30): 1}


async def test_distinct_json_keys(probe_db: Database) -> None:
    docs = [{"b": 1, "a": 2}, {"c": 3, "a": 4}, {"d": 5}]
    await _insert(probe_db, [_row(n, "x", T0, T0, d) for n, d in enumerate(docs, 1)])
    first_two = select(probe.c.doc).where(probe.c.id <= 2).subquery()
    async with probe_db.read() as conn:
        assert await distinct_json_keys(conn, first_two.c.doc, limit=10) == ["a", "b", "c"]
        assert await distinct_json_keys(conn, first_two.c.doc, limit=2) == ["a", "b"]


async def test_set_local_lasts_for_the_transaction(probe_db: Database, backend: str) -> None:
    async with probe_db.read() as conn:
        await set_local(conn, jit="off", work_mem="64MB")
        if backend == "postgresql":
            jit = (await conn.execute(text("SELECT current_setting('jit')"))).scalar_one()
            work_mem = (await conn.execute(text("SHOW work_mem"))).scalar_one()
            assert (jit, work_mem) == ("off", "64MB")
        else:  # nothing to set; the transaction still works
            assert (await conn.execute(select(func.count()).select_from(probe))).scalar_one() == 0
    if backend == "postgresql":
        async with probe_db.read() as conn:
            assert (await conn.execute(text("SHOW work_mem"))).scalar_one() != "64MB"


async def test_in_batch_updates_exactly_the_locked_batch(probe_db: Database) -> None:
    """``in_batch``: the rows among a limited, ordered, locking subquery's
    values, and no others, as the outbox's one-statement dispatch uses it."""
    await _insert(probe_db, [_row(n, "g" if n % 2 else "h", T0, T0) for n in range(1, 11)])
    batch = (
        select(probe.c.id)
        .where(probe.c.grp == "g")
        .order_by(probe.c.id)
        .limit(3)
        .with_for_update(skip_locked=True)
        .scalar_subquery()
    )
    async with probe_db.begin() as conn:
        moved = (
            await conn.execute(
                probe.update()
                .where(in_batch(probe.c.id, batch))
                .values(grp="done")
                .returning(probe.c.id)
            )
        ).scalars()
        assert sorted(moved) == [1, 3, 5]
        left = (await conn.execute(select(probe.c.id).where(probe.c.grp == "g"))).scalars()
        assert sorted(left) == [7, 9]
