"""How the worker settles what a handler did (SPEC L-3, L-4, L-5, L-17).

Covers, with a real worker: a return value → succeeded with its result;
``Skip`` → parent succeeded, attempt ``skipped`` (L-4); RetryableError →
pending with the 30 s backoff, or the delay it names (L-5); PermanentError →
dead; ExternalOutcomeUnconfirmed → dead ``external_outcome_unconfirmed``; a
plain exception → pending retry, but dead ``external_outcome_unconfirmed``
after ``ctx.mark_side_effect()`` (L-17); a value that is not JSON → dead
``bad_result``; an exhausted budget → dead ``attempts_exhausted`` (L-5); a job
type without a handler → dead ``unknown_job_type`` while the worker keeps
running and executes the next job (L-3).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.errors import ExternalOutcomeUnconfirmed, PermanentError, RetryableError
from flowledger.ledger.models import JobSpec
from flowledger.ledger.types import JobType
from flowledger.worker.context import JobContext, Skip
from tests.integration.ledger_helpers import attempt_rows
from tests.integration.worker_helpers import LEDGER, add_scripted, running_worker, wait_job
from tests.ledger_access import ledger_of

NO_HANDLER = JobType("wt_no_handler", LEDGER, max_attempts=3)


def returns(value: Any) -> Callable[[JobContext], Any]:
    async def handler(ctx: JobContext) -> Any:
        return value

    return handler


def raises(exc: Exception, *, mark_first: bool = False) -> Callable[[JobContext], Any]:
    async def handler(ctx: JobContext) -> Any:
        if mark_first:
            await ctx.mark_side_effect()
        raise exc

    return handler


# (behaviour, job status, job result, last_error_code, last_error, attempt status, retry delay s)
CASES: dict[str, tuple[Any, ...]] = {
    "result": (returns({"n": 1}), "succeeded", {"n": 1}, None, None, "succeeded", None),
    "none": (returns(None), "succeeded", None, None, None, "succeeded", None),
    "skip": (
        returns(Skip("subscription disabled")),
        "succeeded",
        {"skipped": "subscription disabled"},
        None,
        None,
        "skipped",
        None,
    ),
    "retryable": (
        raises(RetryableError("busy")),
        "pending",
        None,
        "retryable",
        "busy",
        "failed",
        30,
    ),
    "retryable_delay": (
        raises(RetryableError("rate limited", next_retry_delay_ms=7_500)),
        "pending",
        None,
        "retryable",
        "rate limited",
        "failed",
        7.5,
    ),
    "permanent": (
        raises(PermanentError("bad input")),
        "dead",
        None,
        "permanent",
        "bad input",
        "failed",
        None,
    ),
    "unconfirmed": (
        raises(ExternalOutcomeUnconfirmed("no response")),
        "dead",
        None,
        "external_outcome_unconfirmed",
        "no response",
        "failed",
        None,
    ),
    "plain": (
        raises(ValueError("boom")),
        "pending",
        None,
        "ValueError",
        "ValueError: boom",
        "failed",
        30,
    ),
    "plain_after_marker": (
        raises(ConnectionError("reset"), mark_first=True),
        "dead",
        None,
        "external_outcome_unconfirmed",
        "ConnectionError: reset",
        "failed",
        None,
    ),
    "not_json": (
        returns({"when": object()}),
        "dead",
        None,
        "bad_result",
        "handler returned a value that is not JSON: dict",
        "failed",
        None,
    ),
}


@pytest.mark.parametrize("case", list(CASES))
async def test_outcome_classification_L3_L4_L5_L17(
    case: str, db: Database, clock: ManualClock
) -> None:
    fn, status, result, code, error, attempt_status, delay_s = CASES[case]
    now = clock.now()
    async with running_worker(db, clock):
        job_id = await add_scripted(db, clock, fn)
        row = await wait_job(db, job_id, status)
    assert row.attempts == 1
    assert (row.result, row.last_error_code, row.last_error) == (result, code, error)
    assert (row.lease_token, row.lease_until, row.lease_owner) == (None, None, None)
    if delay_s is not None:
        assert row.run_at == now + timedelta(seconds=delay_s)
    (attempt,) = await attempt_rows(db, job_id)
    assert (attempt.status, attempt.error, attempt.error_code) == (attempt_status, error, code)
    assert attempt.finished_at == now
    assert (attempt.side_effect_at is not None) == (case == "plain_after_marker")


async def test_retries_until_the_budget_is_spent_L5(db: Database, clock: ManualClock) -> None:
    calls: list[int] = []

    async def flaky(ctx: JobContext) -> Any:
        calls.append(ctx.job.attempt)
        raise RetryableError(f"attempt {ctx.job.attempt} failed")

    async with running_worker(db, clock) as run:
        job_id = await add_scripted(db, clock, flaky, max_attempts=2)
        first = await wait_job(db, job_id, "pending")
        assert (first.attempts, first.run_at) == (1, clock.now() + timedelta(seconds=30))
        clock.advance(seconds=30)
        run.worker.db.hub.signal(None)
        row = await wait_job(db, job_id, "dead")
    assert calls == [1, 2]
    assert (row.attempts, row.last_error, row.last_error_code) == (
        2, "attempt 2 failed", "attempts_exhausted",
    )  # fmt: skip
    assert [(a.attempt, a.status) for a in await attempt_rows(db, job_id)] == [
        (1, "failed"), (2, "failed"),
    ]  # fmt: skip


async def test_unknown_job_type_goes_dead_and_the_worker_goes_on_L3(
    db: Database, clock: ManualClock
) -> None:
    async with running_worker(db, clock) as run:
        async with db.begin() as conn:
            orphan = (
                await ledger_of(conn).job_insert(conn, JobSpec(type=NO_HANDLER), now=clock.now())
            ).job_id
        row = await wait_job(db, orphan, "dead")
        good = await add_scripted(db, clock, returns({"ok": True}))
        good_row = await wait_job(db, good, "succeeded")
        assert not run.task.done()
    assert (row.attempts, row.last_error_code) == (1, "unknown_job_type")
    assert "'wt_no_handler'" in row.last_error and "--import" in row.last_error
    (attempt,) = await attempt_rows(db, orphan)
    assert (attempt.status, attempt.error_code) == ("failed", "unknown_job_type")
    assert good_row.result == {"ok": True}
