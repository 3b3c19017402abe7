"""Worker leases, deadlines and lost ownership (SPEC L-10, L-11, L-9, L-20, L-17).

Covers, with a real worker on a ManualClock: lease renewal keeps a handler
that runs longer than the lease alive, and the drain does not reclaim it
(L-10, L-20); renewing never extends the lease past the execution deadline,
and passing the deadline fires the abort — a handler that returns on it and
one that ignores it (cancelled after the abort grace) both settle as
``deadline_exceeded`` (retry with backoff, or dead when the budget is spent)
(L-11, L-5); after a side-effect marker the deadline dead-letters the job
(L-17); a lost lease (job canceled, or its expired lease reclaimed by the
drain) fires the abort with reason ``lease_lost`` and the worker writes
nothing (L-9).
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ledger.models import ClaimedJob, Outcome
from flowledger.worker.context import JobContext
from tests.integration.ledger_helpers import attempt_rows, job_row
from tests.integration.worker_helpers import (
    Gate,
    add_scripted,
    is_idle,
    running_worker,
    wait_job,
    wait_started,
    wait_until,
)
from tests.ledger_access import ledger_of


async def test_renewal_keeps_a_long_handler_alive_L10(db: Database, clock: ManualClock) -> None:
    gate = Gate(result={"done": True})
    start = clock.now()
    async with running_worker(db, clock) as run:
        job_id = await add_scripted(db, clock, gate)
        await wait_started(gate)
        assert (await job_row(db, job_id)).lease_until == start + timedelta(seconds=60)
        for _ in range(2):  # 100 s in all: longer than the 60 s lease
            clock.advance(seconds=50)
            await run.worker.renewer.run_once()
            assert (await job_row(db, job_id)).lease_until == clock.now() + timedelta(seconds=60)
        await run.worker.drain.run_once()
        report = run.worker.drain.last_report
        assert report is not None
        assert (report.retried, report.dead) == ([], [])
        row = await job_row(db, job_id)
        assert (row.status, row.attempts, gate.abort_reason) == ("running", 1, None)
        assert not gate.ctx.aborted  # type: ignore[union-attr]
        gate.release.set()
        row = await wait_job(db, job_id, "succeeded")
    assert (row.attempts, row.result, row.lease_token) == (1, {"done": True}, None)
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.started_at, attempt.finished_at) == (
        "succeeded", start, start + timedelta(seconds=100),
    )  # fmt: skip
    assert attempt.duration_ms == 100_000


async def test_renewal_never_extends_past_the_deadline_L11(
    db: Database, clock: ManualClock
) -> None:
    gate = Gate()
    start = clock.now()
    async with running_worker(db, clock) as run:
        job_id = await add_scripted(db, clock, gate, execution_timeout_ms=90_000)
        await wait_started(gate)
        deadline = start + timedelta(seconds=90)
        assert (await job_row(db, job_id)).execution_deadline == deadline
        clock.advance(seconds=45)
        await run.worker.renewer.run_once()
        assert (await job_row(db, job_id)).lease_until == deadline  # not now + 60 s
        assert not gate.ctx.aborted  # type: ignore[union-attr]
        gate.release.set()
        await wait_job(db, job_id, "succeeded")


@pytest.mark.parametrize(
    ("max_attempts", "status", "code"),
    [(3, "pending", "deadline_exceeded"), (1, "dead", "attempts_exhausted")],
)
@pytest.mark.parametrize("honour_abort", [True, False], ids=["returns", "ignores"])
async def test_deadline_aborts_the_handler_L11(
    honour_abort: bool,
    max_attempts: int,
    status: str,
    code: str,
    db: Database,
    clock: ManualClock,
) -> None:
    gate = Gate(honour_abort=honour_abort, result={"late": "success"})
    start = clock.now()
    async with running_worker(db, clock, abort_grace_s=0.2) as run:
        job_id = await add_scripted(
            db, clock, gate, execution_timeout_ms=5_000, max_attempts=max_attempts
        )
        await wait_started(gate)
        assert (await job_row(db, job_id)).lease_until == start + timedelta(seconds=5)
        now = clock.advance(seconds=6)
        await run.worker.renewer.run_once()
        assert gate.ctx is not None and gate.ctx.abort_reason == "deadline_exceeded"
        row = await wait_job(db, job_id, status)
        await wait_until(lambda: is_idle(run.worker), what="the worker to let go of the job")
    assert (gate.abort_reason, gate.cancelled) == ("deadline_exceeded", not honour_abort)
    # the handler's late return value is not a success: the deadline is hard
    assert (row.attempts, row.result, row.last_error_code, row.lease_token) == (
        1, None, code, None,
    )  # fmt: skip
    assert row.last_error == "execution deadline passed; the handler was aborted"
    if status == "pending":
        assert row.run_at == now + timedelta(seconds=30)
    (attempt,) = await attempt_rows(db, job_id)
    # the attempt keeps its own cause even when the job is dead for exhaustion
    assert (attempt.status, attempt.error_code, attempt.finished_at) == (
        "failed", "deadline_exceeded", now,
    )  # fmt: skip


async def test_deadline_after_a_side_effect_marker_is_unconfirmed_L11_L17(
    db: Database, clock: ManualClock
) -> None:
    gate = Gate(honour_abort=False)

    async def marks_then_hangs(ctx: JobContext) -> Any:
        await ctx.mark_side_effect()
        return await gate(ctx)

    async with running_worker(db, clock) as run:
        job_id = await add_scripted(db, clock, marks_then_hangs, execution_timeout_ms=5_000)
        await wait_started(gate)
        clock.advance(seconds=6)
        await run.worker.renewer.run_once()
        row = await wait_job(db, job_id, "dead")
    assert gate.cancelled
    assert (row.last_error_code, row.attempts) == ("external_outcome_unconfirmed", 1)
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.error_code) == ("failed", "external_outcome_unconfirmed")
    assert attempt.side_effect_at is not None


@pytest.mark.parametrize("how", ["canceled", "reclaimed"])
async def test_lost_lease_aborts_and_writes_nothing_L9(
    how: str, db: Database, clock: ManualClock
) -> None:
    gate = Gate(result={"stale": "result"})
    async with running_worker(db, clock) as run:
        settlements: list[tuple[int, Outcome]] = []
        settle = run.worker.settler.settle

        async def spy(job: ClaimedJob, outcome: Outcome) -> bool:
            settlements.append((job.id, outcome))
            return await settle(job, outcome)

        run.worker.settler.settle = spy  # type: ignore[method-assign]
        job_id = await add_scripted(db, clock, gate)
        await wait_started(gate)
        if how == "canceled":
            async with db.begin() as conn:
                await ledger_of(conn).job_cancel(conn, job_id, now=clock.advance(seconds=5))
        else:  # the executor stalled: no renewal, the drain reclaims the lease
            clock.advance(seconds=61)
            await run.worker.drain.run_once()
            assert run.worker.drain.last_report.retried == [job_id]  # type: ignore[union-attr]
        before = (await job_row(db, job_id), await attempt_rows(db, job_id))
        clock.advance(seconds=1)
        await run.worker.renewer.run_once()
        await wait_until(lambda: is_idle(run.worker), what="the worker to drop the job")
        assert (gate.abort_reason, gate.cancelled) == ("lease_lost", False)
        assert settlements == []
        assert (await job_row(db, job_id), await attempt_rows(db, job_id)) == before
    row, (attempt,) = before
    if how == "canceled":
        assert (row.status, row.generation, row.cancel_reason) == (
            "canceled", 2, "canceled by operator",
        )  # fmt: skip
        assert (attempt.status, attempt.error) == ("canceled", "canceled by operator")
    else:
        assert (row.status, row.generation, row.last_error_code) == ("pending", 1, "lease_expired")
        assert (attempt.status, attempt.error_code) == ("failed", "lease_expired")
    assert (row.result, row.lease_token) == (None, None)
