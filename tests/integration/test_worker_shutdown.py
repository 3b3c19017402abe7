"""Graceful shutdown of a worker (SPEC L-6, L-17, L-21).

Covers: once stop is set the worker claims nothing more, lets a running
handler finish within ``shutdown_grace_s`` and settles it, and marks its node
``stopped`` (L-6, L-21); handlers still running after the grace period get the
``shutdown`` abort and are released — pending again now, the attempt not
counted, the attempt row ``canceled`` — whether they return on the abort or
ignore it and are cancelled after ``abort_grace_s``; one that had recorded a
side-effect marker goes to the ``external_outcome_unconfirmed`` dead letter
instead (L-17).
"""

from __future__ import annotations

from typing import Any

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.worker.context import JobContext
from tests.integration.ledger_helpers import attempt_rows, job_row
from tests.integration.worker_helpers import (
    Gate,
    add_scripted,
    claimers_stopped,
    node_row,
    start_worker,
    wait_job,
    wait_started,
    wait_until,
    worker_config,
)


async def test_stop_lets_a_running_handler_finish_and_claims_nothing_L6(
    db: Database, clock: ManualClock
) -> None:
    gate = Gate(result={"finished": "in grace"})
    run = await start_worker(db, clock, worker_config(shutdown_grace_s=10.0))
    try:
        running = await add_scripted(db, clock, gate)
        await wait_started(gate)
        run.stop.set()
        await wait_until(lambda: claimers_stopped(run.worker), what="the pools to stop claiming")
        late = await add_scripted(db, clock, Gate())  # committed, hinted, due
        assert not run.task.done()  # still waiting for the running handler
        gate.release.set()
    finally:
        await run.shutdown()
    row = await job_row(db, running)
    assert (row.status, row.attempts, row.result) == ("succeeded", 1, {"finished": "in grace"})
    assert gate.abort_reason is None
    late_row = await job_row(db, late)
    assert (late_row.status, late_row.attempts, late_row.lease_token) == ("pending", 0, None)
    assert await attempt_rows(db, late) == []
    node = await node_row(db, run.worker.node.id)
    assert (node.status, node.slots_in_use, node.heartbeat_at) == ("stopped", 0, clock.now())


async def test_handlers_outliving_the_grace_are_released_L6_L17(
    db: Database, clock: ManualClock
) -> None:
    returns = Gate(honour_abort=True, result={"gave": "up"})
    ignores = Gate(honour_abort=False, result={"never": "returned"})
    unsafe = Gate(honour_abort=False)

    async def marks_then_hangs(ctx: JobContext) -> Any:
        await ctx.mark_side_effect()
        return await unsafe(ctx)

    run = await start_worker(db, clock, worker_config(shutdown_grace_s=0.2, abort_grace_s=0.2))
    try:
        ids = [
            await add_scripted(db, clock, returns),
            await add_scripted(db, clock, ignores),
            await add_scripted(db, clock, marks_then_hangs, max_attempts=5),
        ]
        for gate in (returns, ignores, unsafe):
            await wait_started(gate)
    finally:
        await run.shutdown()
    assert (returns.abort_reason, returns.cancelled) == ("shutdown", False)
    assert (ignores.abort_reason, ignores.cancelled) == ("shutdown", True)
    assert (unsafe.abort_reason, unsafe.cancelled) == ("shutdown", True)
    for job_id in ids[:2]:
        row = await job_row(db, job_id)
        assert (row.status, row.attempts, row.generation, row.result) == ("pending", 0, 1, None)
        assert (row.run_at, row.lease_token, row.lease_owner) == (clock.now(), None, None)
        (attempt,) = await attempt_rows(db, job_id)
        assert (attempt.status, attempt.error) == (
            "canceled", "worker shut down before the handler finished",
        )  # fmt: skip
    row = await job_row(db, ids[2])
    assert (row.status, row.attempts, row.last_error_code) == (
        "dead", 1, "external_outcome_unconfirmed",
    )  # fmt: skip
    (attempt,) = await attempt_rows(db, ids[2])
    assert (attempt.status, attempt.error_code) == ("failed", "external_outcome_unconfirmed")
    assert (await node_row(db, run.worker.node.id)).status == "stopped"


async def test_a_released_job_runs_again_on_the_next_worker_L6(
    db: Database, clock: ManualClock
) -> None:
    first = Gate(honour_abort=False)
    calls: list[int] = []

    async def second_time_lucky(ctx: JobContext) -> Any:
        calls.append(ctx.job.attempt)
        if len(calls) == 1:
            return await first(ctx)
        return {"attempt": ctx.job.attempt}

    run = await start_worker(db, clock, worker_config(shutdown_grace_s=0.1, abort_grace_s=0.1))
    try:
        job_id = await add_scripted(db, clock, second_time_lucky, max_attempts=1)
        await wait_started(first)
    finally:
        await run.shutdown()
    assert (await job_row(db, job_id)).status == "pending"
    successor = await start_worker(db, clock)
    try:
        row = await wait_job(db, job_id, "succeeded")
    finally:
        await successor.shutdown()
    # the released attempt did not use up the budget of one
    assert (row.attempts, row.result, calls) == (1, {"attempt": 1}, [1, 1])
    assert [a.status for a in await attempt_rows(db, job_id)] == ["canceled", "succeeded"]
    assert successor.worker.node.id != run.worker.node.id
