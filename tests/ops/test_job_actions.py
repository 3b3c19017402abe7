"""Operator actions on named jobs (SPEC L-24, L-9, L-18, A-3), both backends.

Covers: retry and skip eligibility and outcome state by state (pending,
running, paused, succeeded, failed, dead, canceled); a pending job in
automatic retry refuses a manual retry; a paused job refuses and names its
instance's resume, and continues when the instance resumes; a new payload
changes the operationKey, the same or no payload keeps it; a skipped running
job's executor is stale (its settlement writes nothing); batch retry and
batch skip with mixed eligible / ineligible / unknown / other-tenant ids:
counts, per-item reasons, staggered runAt and the replay batch id.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.engine.job_types import PAUSABLE_TYPES
from flowledger.errors import InvalidStateError, NotFoundError
from flowledger.ledger.driver import ledger_driver
from flowledger.ledger.models import Outcome
from flowledger.ops.jobs.actions import batch_retry, batch_skip, retry_job, skip_job
from tests.integration.ledger_helpers import (
    add_job,
    attempt_rows,
    claim_one,
    force_status,
    job_row,
    settle_single,
)
from tests.ledger_access import ledger_of
from tests.runtime_support import default_engine

INSTANCE = 4242
# Created in this order so that each claim takes the job just enqueued.
STATES = ["running", "succeeded", "dead", "failed", "canceled", "paused", "pending"]
RETRY_TABLE = {
    "pending": "an automatic retry is already scheduled",
    "running": "only failed, dead or canceled jobs can be retried",
    "paused": "resume the instance",
    "succeeded": "only failed, dead or canceled jobs can be retried",
    "failed": None,
    "dead": None,
    "canceled": None,
}
SKIP_TABLE = {
    "pending": None,
    "running": None,
    "paused": None,
    "succeeded": "cannot be canceled",
    "failed": None,
    "dead": None,
    "canceled": "cannot be canceled",
}


async def make_job(db: Database, clock: ManualClock, state: str, **spec: Any) -> int:
    """One job brought into ``state`` through the ledger's own calls (``failed``
    is reached by no ledger call, so it is forced)."""
    spec.setdefault("tenant_id", "default")
    if state == "paused":
        job_id = await add_job(db, clock.now(), "delay_wake", instance_id=INSTANCE, **spec)
        async with db.begin() as conn:
            assert await ledger_driver(db).jobs_pause(
                conn, INSTANCE, types=PAUSABLE_TYPES, now=clock.now()
            ) == [job_id]
        return job_id
    job_id = await add_job(db, clock.now(), **spec)
    if state == "pending":
        return job_id
    if state == "failed":
        await force_status(db, job_id, "failed", last_error="needs a hand")
        return job_id
    if state == "canceled":
        async with db.begin() as conn:
            await ledger_of(conn).job_cancel(conn, job_id, now=clock.now())
        return job_id
    job = await claim_one(db, clock.now())
    assert job.id == job_id
    if state == "succeeded":
        assert await settle_single(db, job, Outcome.success({"ok": True}), clock.now())
    elif state == "dead":
        assert await settle_single(db, job, Outcome.dead("HTTP 400 from crm"), clock.now())
    return job_id


async def all_states(db: Database, clock: ManualClock) -> dict[str, int]:
    ids = {state: await make_job(db, clock, state) for state in STATES}
    for state, job_id in ids.items():
        assert (await job_row(db, job_id)).status == state
    return ids


async def test_retry_eligibility_state_by_state(db: Database, clock: ManualClock) -> None:
    ids = await all_states(db, clock)
    now = clock.advance(seconds=5)
    for state, refusal in RETRY_TABLE.items():
        before = await job_row(db, ids[state])
        if refusal is None:
            row = await retry_job(db, ids[state], now=now, actor="op")
            assert (row["status"], row["attempts"], row["run_at"]) == ("pending", 0, now), state
            assert row["generation"] == before.generation + 1, state
            continue
        with pytest.raises(InvalidStateError, match=refusal) as caught:
            await retry_job(db, ids[state], now=now, actor="op")
        assert caught.value.code == "invalid_state"
        assert caught.value.details["status"] == state
        after = await job_row(db, ids[state])
        assert (after.status, after.generation) == (state, before.generation), state


async def test_skip_eligibility_state_by_state(db: Database, clock: ManualClock) -> None:
    ids = await all_states(db, clock)
    now = clock.advance(seconds=5)
    for state, refusal in SKIP_TABLE.items():
        before = await job_row(db, ids[state])
        if refusal is None:
            row = await skip_job(
                db, ids[state], now=now, actor="op", reason=f"skip the {state} one"
            )
            assert row["status"] == "canceled", state
            assert row["generation"] == before.generation + 1, state
            assert row["cancel_reason"] == f"skip the {state} one"
            continue
        with pytest.raises(InvalidStateError, match=refusal):
            await skip_job(db, ids[state], now=now, actor="op")
        after = await job_row(db, ids[state])
        assert (after.status, after.generation) == (state, before.generation), state


async def test_a_pending_job_in_automatic_retry_refuses_a_manual_retry(
    db: Database, clock: ManualClock
) -> None:
    job_id = await make_job(db, clock, "pending")
    job = await claim_one(db, clock.now())
    assert await settle_single(db, job, Outcome.retry("HTTP 503 from erp"), clock.now())
    before = await job_row(db, job_id)
    assert before.status == "pending" and before.run_at > clock.now()  # backoff scheduled
    with pytest.raises(InvalidStateError, match="automatic retry is already scheduled"):
        await retry_job(db, job_id, now=clock.now(), actor="op")
    after = await job_row(db, job_id)
    assert (after.generation, after.attempts, after.run_at) == (1, 1, before.run_at)


async def test_a_paused_job_refuses_retry_until_its_instance_resumes(
    db: Database, clock: ManualClock
) -> None:
    job_id = await make_job(db, clock, "paused")
    with pytest.raises(InvalidStateError, match="resume the instance instead"):
        await retry_job(db, job_id, now=clock.now(), actor="op")
    assert (await job_row(db, job_id)).status == "paused"
    async with db.begin() as conn:
        await ledger_driver(db).jobs_resume(conn, INSTANCE, types=PAUSABLE_TYPES, now=clock.now())
    assert (await job_row(db, job_id)).status == "pending"


async def test_a_new_payload_gets_a_new_operation_key(db: Database, clock: ManualClock) -> None:
    job_id = await make_job(db, clock, "dead", payload={"amount": 10})
    first_key = (await job_row(db, job_id)).operation_key

    async def kill_and_retry(**kw: Any) -> dict[str, Any]:
        await force_status(db, job_id, "dead")
        return await retry_job(db, job_id, now=clock.now(), actor="op", **kw)

    assert (await kill_and_retry())["operation_key"] == first_key
    assert (await kill_and_retry(payload={"amount": 10}))["operation_key"] == first_key
    changed = await kill_and_retry(payload={"amount": 12})
    assert changed["operation_key"] != first_key
    assert (await job_row(db, job_id)).payload == {"amount": 12}


async def test_skipping_a_running_job_makes_its_executor_stale(
    db: Database, clock: ManualClock
) -> None:
    job_id = await make_job(db, clock, "pending")
    job = await claim_one(db, clock.now())
    row = await skip_job(db, job_id, now=clock.advance(seconds=1), actor="op")
    assert (row["status"], row["generation"]) == ("canceled", job.generation + 1)
    # the old executor finishes and tries to settle: fenced out, nothing written
    assert not await settle_single(db, job, Outcome.success({"late": True}), clock.now())
    after = await job_row(db, job_id)
    assert (after.status, after.result, after.lease_token) == ("canceled", None, None)
    [attempt] = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.error) == ("canceled", "skipped by operator")


async def test_single_actions_do_not_cross_tenants(db: Database, clock: ManualClock) -> None:
    theirs = await make_job(db, clock, "dead", tenant_id="acme")
    for action in (retry_job, skip_job):
        with pytest.raises(NotFoundError, match=f"job {theirs} not found"):
            await action(db, theirs, now=clock.now(), actor="op", tenants=["default"])
    with pytest.raises(NotFoundError):
        await retry_job(db, 999_999, now=clock.now(), actor="op")
    assert (await job_row(db, theirs)).status == "dead"
    assert (await retry_job(db, theirs, now=clock.now(), actor="op", tenants=["acme"]))[
        "status"
    ] == "pending"


async def _batch_ids(db: Database, clock: ManualClock) -> tuple[dict[str, int], int, list[int]]:
    theirs = await make_job(db, clock, "dead", tenant_id="acme")
    ids = await all_states(db, clock)
    request = [ids[s] for s in STATES] + [theirs, 999_999, ids["dead"]]  # + a duplicate
    return ids, theirs, request


async def test_batch_retry_counts_and_explains_every_item(db: Database, clock: ManualClock) -> None:
    ids, theirs, request = await _batch_ids(db, clock)
    now = clock.advance(seconds=10)
    result = await batch_retry(db, request, now=now, actor="op", tenants=["default"], rate=4)
    assert (result.matched, result.submitted, result.skipped) == (7, 3, 6)
    assert result.rate == 4 and len(result.replay_batch_id or "") == 32
    assert (result.window_from, result.window_to) == (now, now + timedelta(seconds=0.75))
    items = {item.id: item for item in result.items}
    assert [item.id for item in result.items] == request[:-1]  # request order, no duplicate
    for state in STATES:
        item = items[ids[state]]
        expected = "skipped" if RETRY_TABLE[state] else "submitted"
        assert (item.outcome, item.status) == (expected, state), state
        if RETRY_TABLE[state]:
            assert RETRY_TABLE[state] in (item.reason or "") and item.code == "invalid_state"
    for unseen in (theirs, 999_999):
        assert (items[unseen].outcome, items[unseen].code) == ("skipped", "not_found")
        assert items[unseen].reason == f"job {unseen} not found"  # the same for both
    # submitted in request order (dead, failed, canceled), k-th due at now + k/4 s
    async with db.read() as conn:
        rows = {r.id: r for r in (await conn.execute(select(jobs))).all()}
    for k, state in enumerate(["dead", "failed", "canceled"]):
        row = rows[ids[state]]
        assert (row.status, row.run_at) == ("pending", now + timedelta(seconds=k / 4))
        assert row.replay_batch_id == result.replay_batch_id
    stamped = {job_id for job_id, r in rows.items() if r.replay_batch_id is not None}
    assert stamped == {ids["dead"], ids["failed"], ids["canceled"]}
    assert rows[theirs].status == "dead"
    # a later single retry takes the job out of the batch it no longer runs for
    await force_status(db, ids["dead"], "dead")
    assert (await retry_job(db, ids["dead"], now=now, actor="op"))["replay_batch_id"] is None


async def test_batch_skip_counts_and_explains_every_item(db: Database, clock: ManualClock) -> None:
    ids, theirs, request = await _batch_ids(db, clock)
    result = await batch_skip(
        db, request, now=clock.now(), actor="op", tenants=["default"], reason="noise"
    )
    assert (result.matched, result.submitted, result.skipped) == (7, 5, 4)
    items = {item.id: item for item in result.items}
    for state in STATES:
        expected = "skipped" if SKIP_TABLE[state] else "submitted"
        assert items[ids[state]].outcome == expected, state
        final = "canceled" if expected == "submitted" or state == "canceled" else state
        row = await job_row(db, ids[state])
        assert row.status == final, state
        if expected == "submitted":
            assert row.cancel_reason == "noise"
    assert items[theirs].code == "not_found"
    assert (await job_row(db, theirs)).status == "dead"


async def test_batches_refuse_bad_input(db: Database, clock: ManualClock) -> None:
    from flowledger.errors import FlowledgerError

    for ids, rate, field in (([], 20, "ids"), (range(1, 502), 20, "ids"), ([1], 0, "rate")):
        with pytest.raises(FlowledgerError) as caught:
            await batch_retry(db, ids, now=clock.now(), actor="op", rate=rate)
        assert caught.value.field == field
    with pytest.raises(FlowledgerError, match="at most 500"):
        await batch_skip(db, range(1, 502), now=clock.now(), actor="op")


async def test_retry_waits_for_a_suspended_instance_L18_L24(
    db: Database, clock: ManualClock
) -> None:
    """A dead delay_wake of a suspended instance made pending would run against
    the suspended instance and be skipped — its delay lost. Resume first."""
    from tests.integration.engine_helpers import definition
    from tests.integration.engine_helpers import jobs as instance_jobs

    engine = default_engine(db, clock)
    nodes = [
        {"key": "start", "type": "start"},
        {"key": "wait", "type": "delay", "duration": "PT1H"},
        {"key": "end", "type": "end"},
    ]
    await engine.deploy(definition("d", nodes, [("start", "wait"), ("wait", "end")]), actor="a")
    iid = await engine.start("d", form={}, initiator="u")
    [job] = await instance_jobs(db, iid, type="delay_wake")
    async with db.begin() as conn:  # as if its attempts were exhausted
        from sqlalchemy import update

        await conn.execute(update(jobs).where(jobs.c.id == job["id"]).values(status="dead"))
    await engine.suspend(iid, actor="admin")
    with pytest.raises(InvalidStateError) as info:
        await retry_job(db, job["id"], now=clock.now(), actor="op")
    assert "resume the instance" in info.value.message
    result = await batch_retry(db, [job["id"]], now=clock.now(), actor="op")
    assert (result.submitted, result.skipped) == (0, 1)
    await engine.resume(iid, actor="admin")
    state = await retry_job(db, job["id"], now=clock.now(), actor="op")
    assert state["status"] == "pending"
