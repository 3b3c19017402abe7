"""The batch-operation package itself (issue 29 item 4), both backends: the
runner keeps its rate, each item runs in its own transaction (one failing
item rolls back alone and the others go on), the outcome counts, and the
recorded batch is described by id and listed, within the caller's tenants."""

from __future__ import annotations

import time
from datetime import datetime

import pytest
from sqlalchemy import insert, select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.retention_schema import workflow_retention_policies as policies
from flowledger.errors import InvalidStateError
from flowledger.ops.batch import (
    BatchRecorder,
    Counts,
    ItemOutcome,
    RateTooSlow,
    Selection,
    check_paced,
    describe,
    done,
    list_batches,
    run_items,
    skipped,
)


def _recorder(db: Database, clock: ManualClock, **kw: object) -> BatchRecorder:
    return BatchRecorder(db, "test.batch", actor="ops", clock=clock.now, **kw)  # type: ignore[arg-type]


async def _names(db: Database) -> list[str]:
    async with db.read() as conn:
        rows = await conn.execute(select(policies.c.name).order_by(policies.c.name))
        return [str(r[0]) for r in rows]


async def test_each_item_in_its_own_transaction_and_counts(
    db: Database, clock: ManualClock
) -> None:
    async def act(n: int) -> ItemOutcome:
        async with db.begin() as conn:
            await conn.execute(
                insert(policies).values(
                    name=f"p{n:02d}",
                    enabled=True,
                    keep_days=1,
                    updated_by="ops",
                    updated_at=clock.now(),
                )
            )
            if n == 3:
                raise RuntimeError("boom")  # rolls back p03 alone
            if n == 5:
                raise InvalidStateError("not now", field="status")
        if n == 7:
            return skipped(n, "nothing to do", "unchanged")
        return done(n, name=f"p{n:02d}")

    selection = Selection(list(range(1, 10)), skipped=[skipped(99, "instance not found")])
    op = await _recorder(db, clock, reason="why", tenants=["b", "a"]).run(selection, act, key=int)
    assert await _names(db) == [f"p{n:02d}" for n in (1, 2, 4, 6, 7, 8, 9)]
    assert op.counts == Counts(total=10, done=6, skipped=2, failed=2)
    by_key = {o.key: o for o in op.outcomes}
    assert by_key[3].error == {"code": "internal_error", "message": "RuntimeError"}
    assert by_key[5].error == {"code": "invalid_state", "message": "not now"}
    assert by_key[7].public() == {
        "key": 7,
        "result": "skipped",
        "reason": "nothing to do",
        "code": "unchanged",
    }
    assert by_key[1].doc("id", "advanced") == {
        "id": 1,
        "outcome": "advanced",
        "result": "done",
        "name": "p01",
    }

    doc = await describe(db, op.id)
    assert doc is not None
    assert doc["state"] == "completed" and doc["kind"] == "test.batch"
    assert doc["counts"] == {"total": 10, "done": 6, "skipped": 2, "failed": 2}
    assert doc["processed"] == 10 and doc["reason"] == "why" and doc["dryRun"] is False
    assert [r["key"] for r in doc["results"]] == [99, *range(1, 10)]
    assert doc["results"][3] == {
        "key": 3,
        "result": "failed",
        "code": "internal_error",
        "error": {"code": "internal_error", "message": "RuntimeError"},
    }
    # tenant scope: within ["a", "b"] visible, another scope not
    assert await describe(db, op.id, tenants=["a", "b", "c"]) is not None
    assert await describe(db, op.id, tenants=["a"]) is None
    assert await describe(db, "nope") is None


async def test_progress_is_written_while_running(db: Database, clock: ManualClock) -> None:
    recorder = _recorder(db, clock)
    seen: list[dict[str, object]] = []

    async def act(n: int) -> ItemOutcome:
        if n == 60:  # after the first progress write (every 50 items)
            doc = await describe(db, recorder.id)
            assert doc is not None
            seen.append(doc)
        return done(n)

    await recorder.run(Selection(list(range(1, 71))), act, key=int)
    assert seen[0]["state"] == "running"
    assert seen[0]["counts"] == {"total": 70, "done": 50, "skipped": 0, "failed": 0}
    final = await describe(db, recorder.id)
    assert final is not None and final["state"] == "completed" and final["processed"] == 70


async def test_a_broken_batch_is_recorded_failed(db: Database, clock: ManualClock) -> None:
    recorder = _recorder(db, clock)

    async def act(n: int) -> ItemOutcome:
        return done(n)

    async def broken_progress(outcomes: list[ItemOutcome]) -> None:
        raise KeyboardInterrupt

    await recorder.start(2)
    with pytest.raises(KeyboardInterrupt):
        try:
            await run_items([1, 2], act, key=int, progress=broken_progress, progress_every=1)
        except BaseException as exc:
            await recorder.fail([], exc)
            raise
    doc = await describe(db, recorder.id)
    assert doc is not None and doc["state"] == "failed" and "KeyboardInterrupt" in doc["error"]


async def test_rate_spaces_the_items() -> None:
    starts: list[float] = []

    async def act(n: int) -> ItemOutcome:
        starts.append(time.monotonic())
        return done(n)

    began = time.monotonic()
    outcomes = await run_items(list(range(6)), act, key=int, rate=50)  # 20 ms apart
    assert [o.result for o in outcomes] == ["done"] * 6
    assert starts[-1] - began >= 5 / 50 - 0.005
    for k, at in enumerate(starts):
        assert at - began >= k / 50 - 0.005
    with pytest.raises(ValueError):
        await run_items([1], act, key=int, rate=0)


def test_a_paced_run_longer_than_its_bound_is_refused() -> None:
    """count / rate against the bound (the API's 60 s): 60 items at 1 per
    second pass, 61 do not, and the refusal names ``rate`` and the smallest
    rate that passes; no rate (at once) or no bound (the CLI) always pass."""
    check_paced(60, 1, max_seconds=60)
    check_paced(500, 9, max_seconds=60)  # a whole batch at 9 per second: 55.6 s
    with pytest.raises(RateTooSlow) as refused:
        check_paced(61, 1, max_seconds=60)
    assert (refused.value.code, refused.value.field) == ("rate_too_slow", "rate")
    assert refused.value.details == {"count": 61, "rate": 1, "maxSeconds": 60, "minRate": 2}
    with pytest.raises(RateTooSlow) as whole:
        check_paced(500, 8, max_seconds=60)
    assert whole.value.details["minRate"] == 9
    check_paced(10_000, None, max_seconds=60)
    check_paced(10_000, 1, max_seconds=None)


async def test_list_newest_first_paged_and_scoped(db: Database, clock: ManualClock) -> None:
    async def act(n: int) -> ItemOutcome:
        return done(n)

    ids = []
    for tenants in (None, ["a"], ["a"], None):
        op = await _recorder(db, clock, tenants=tenants).run(Selection([1]), act, key=int)
        ids.append(op.id)
        clock.advance(seconds=1)
    page, nxt = await list_batches(db, limit=3)
    assert [p["id"] for p in page] == ids[::-1][:3] and nxt is not None
    rest, last = await list_batches(db, limit=3, after=nxt)
    assert [p["id"] for p in rest] == [ids[0]] and last is None
    mine, _ = await list_batches(db, tenants=["a"])
    assert [p["id"] for p in mine] == [ids[2], ids[1]]
    assert "results" not in page[0]
    assert isinstance(page[0]["startedAt"], datetime)
    assert (await list_batches(db, kind="other"))[0] == []


async def test_a_retention_run_is_a_recorded_batch(db: Database, clock: ManualClock) -> None:
    from flowledger.ops.retention.runs import run_retention

    run = await run_retention(db, now=clock.now(), trigger="manual", actor="ops")
    doc = await describe(db, run["batchId"])
    assert doc is not None and doc["kind"] == "retention.run" and doc["state"] == "completed"
    assert run["counts"] == doc["counts"]
    assert doc["counts"]["total"] == len(run["items"]) == doc["processed"]
    assert {r["key"] for r in doc["results"]} == {i["policy"] for i in run["items"]}
    for item in run["items"]:
        shared = next(r for r in doc["results"] if r["key"] == item["policy"])
        assert shared["result"] == ("skipped" if item["skipped"] else "done")
