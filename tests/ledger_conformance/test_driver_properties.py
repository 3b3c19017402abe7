"""Property test of the ledger driver (issue 16 item 2): random sequences of
operations — insert, claim, batch and single settlement with every outcome,
a step's receipt with its settlement (``receipt_put_and_settle``), lease
renewal, cancel, retry, pause/resume/cleanup of an instance, rescue and the
passing of time — on every implementation never move a job along a
transition :data:`flowledger.states.JOB_TRANSITIONS` forbids, never rewrite a
finished attempt, and never let an executor whose generation or lease token
is stale (or whose job is no longer running) write anything."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import delete

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import workflow_job_effects, workflow_job_executions, workflow_jobs
from flowledger.engine.job_types import CLEANUP_TYPES, DELAY_WAKE, PAUSABLE_TYPES
from flowledger.errors import InvalidStateError, LeaseLostError
from flowledger.ledger.driver import LedgerDriver
from flowledger.ledger.models import ClaimedJob, JobSpec, Outcome
from flowledger.states import JobTransition, Pool
from tests.ledger_conformance.support import (
    CF_TYPE,
    attempt_rows,
    check_changes,
    in_tx,
    job_rows,
)

INSTANCE = 41
OUTCOMES = {
    "success": Outcome.success({"ok": True}),
    "skipped": Outcome.skipped("nothing"),
    "retry": Outcome.retry("boom"),
    "dead": Outcome.dead("bad"),
    "unconfirmed": Outcome.unconfirmed("no answer"),
    "released": Outcome.released("shutdown"),
}
_index = st.integers(min_value=0, max_value=30)
# how an executor presents its claim: as handed out, or forged with another
# generation or another lease token (each part of the fence must be checked)
_forge = st.sampled_from(["claimed", "claimed", "generation", "token"])
# successes weigh more: they take the batch path that differs per driver
_outcome = st.sampled_from(["success", "success", "skipped", *sorted(OUTCOMES)])
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("insert"), st.integers(1, 3), st.booleans()),
        st.tuples(st.just("claim"), st.integers(1, 3), st.sampled_from([1_000, 60_000])),
        st.tuples(st.just("settle"), _index, _forge, _outcome),
        st.tuples(st.just("settle_one"), _index, _forge, _outcome),
        st.tuples(st.just("settle_step"), _index, _forge, _outcome),
        st.tuples(st.just("renew"), _index, _forge),
        st.tuples(st.just("cancel"), _index),
        st.tuples(st.just("retry"), _index),
        st.tuples(st.sampled_from(["pause", "resume", "cleanup", "rescue"])),
        st.tuples(st.just("tick"), st.sampled_from([500, 5_000, 40_000, 700_000])),
    ),
    min_size=1,
    max_size=16,
)
# every sequence starts with claimed work of both kinds, so that settlements
# and renewals (honest and forged) have something to act on
PROLOGUE: list[tuple[Any, ...]] = [("insert", 3, False), ("insert", 2, True), ("claim", 3, 60_000)]
TRANSITIONS = {
    "claim": JobTransition.CLAIM,
    "settle": JobTransition.SETTLE,
    "settle_one": JobTransition.SETTLE,
    "settle_step": JobTransition.SETTLE,
    "cancel": JobTransition.CANCEL,
    "retry": JobTransition.RETRY,
    "pause": JobTransition.PAUSE,
    "resume": JobTransition.RESUME,
    "cleanup": JobTransition.CANCEL_FOR_INSTANCE,
    "rescue": JobTransition.RESCUE,
}


def _owns(row: dict[str, Any] | None, handle: ClaimedJob) -> bool:
    return (
        row is not None
        and row["status"] == "running"
        and row["generation"] == handle.generation
        and row["lease_token"] == handle.lease_token
    )


class Run:
    """One sequence against one driver, checking after every step."""

    def __init__(self, driver: LedgerDriver, db: Database, clock: ManualClock) -> None:
        self.driver, self.db, self.clock = driver, db, clock
        self.handles: list[ClaimedJob] = []  # every claim ever handed out, stale ones too
        self.job_ids: list[int] = []
        self.steps = 0  # receipts written so far: each step's key is its own

    async def step(self, op: tuple[Any, ...]) -> None:
        name = op[0]
        if name == "tick":
            self.clock.advance(ms=op[1])
            return
        if name in ("settle", "settle_one", "settle_step", "renew") and op[2] == "claimed":
            # forgeries of this claim first, with this outcome and with a
            # success (the batch path): they must write nothing
            for forged in ("generation", "token"):
                for rest in dict.fromkeys([op[3:], op[3:] and ("success",)]):
                    await self.step((name, op[1], forged, *rest))
        before, attempts_before = await job_rows(self.db), await attempt_rows(self.db)
        stale_handle: ClaimedJob | None = None
        if name in ("settle", "settle_one", "settle_step", "renew") and self.handles:
            handle = self._handle(op)
            if not _owns(before.get(handle.id), handle) or (
                name == "renew" and before[handle.id]["execution_deadline"] <= self.clock.now()
            ):
                stale_handle = handle
        wrote = await self._apply(op)
        after, attempts_after = await job_rows(self.db), await attempt_rows(self.db)
        check_changes(TRANSITIONS.get(name), before, after, attempts_before, attempts_after)
        for job_id, row in before.items():
            assert after[job_id]["generation"] >= row["generation"], "generation went back"
        if stale_handle is not None:
            assert not wrote, f"{name} by a stale executor of job {stale_handle.id} wrote"
            assert after[stale_handle.id] == before[stale_handle.id]
            execution = stale_handle.execution_id
            assert attempts_after[execution] == attempts_before[execution]

    def _handle(self, op: tuple[Any, ...]) -> ClaimedJob:
        """The chosen claim (the newest first), forged as ``op[2]`` says."""
        handle: ClaimedJob = self.handles[-1 - op[1] % len(self.handles)]
        if op[2] == "generation":
            handle = replace(handle, generation=handle.generation + 1)
        elif op[2] == "token":
            handle = replace(handle, lease_token=handle.lease_token + "-forged")
        return handle

    async def _settle_step(self, handle: ClaimedJob, outcome: Outcome) -> bool:
        """A step's receipt and its settlement, rolled back when fenced out
        (as ``run_step`` does); whether it committed."""
        self.steps += 1
        step_key = f"s{self.steps}"

        async def step(conn: Any) -> None:
            if not await self.driver.receipt_put_and_settle(
                conn,
                handle.fence,
                handle.operation_key,
                step_key,
                {"n": self.steps},
                outcome,
                now=self.clock.now(),
                started_at=handle.started_at,
            ):
                raise LeaseLostError("fenced out")

        try:
            await in_tx(self.db, step)
        except LeaseLostError:
            return False
        return True

    async def _apply(self, op: tuple[Any, ...]) -> bool:
        name, now, driver, db = op[0], self.clock.now(), self.driver, self.db
        if name == "insert":
            job_type = DELAY_WAKE if op[2] else CF_TYPE
            specs = [JobSpec(job_type, instance_id=INSTANCE) for _ in range(op[1])]
            made = await in_tx(db, lambda c: driver.jobs_insert(c, specs, now=now))
            self.job_ids += [r.job_id for r in made]
        elif name == "claim":
            claimed = await driver.jobs_claim(
                db, pool=Pool.LEDGER.value, limit=op[1], node_id="p", now=now, lease_ms=op[2]
            )
            self.handles += claimed
        elif name in ("settle", "settle_one", "settle_step", "renew"):
            if not self.handles:
                return False
            handle, outcome = self._handle(op), OUTCOMES.get(op[-1])
            if name == "renew":
                return bool(await driver.jobs_renew_leases(db, [handle], now=now, lease_ms=60_000))
            assert outcome is not None
            if name == "settle":
                return bool(await driver.jobs_settle(db, [(handle, outcome)], now=now))
            if name == "settle_step":
                return await self._settle_step(handle, outcome)
            return await in_tx(
                db,
                lambda c: driver.job_settle(
                    c, handle.fence, outcome, now=now, started_at=handle.started_at
                ),
            )
        elif name in ("cancel", "retry"):
            if not self.job_ids:
                return False
            job_id = self.job_ids[op[1] % len(self.job_ids)]
            try:
                if name == "cancel":
                    await in_tx(db, lambda c: driver.job_cancel(c, job_id, now=now))
                else:
                    await in_tx(db, lambda c: driver.job_retry(c, job_id, now=now))
            except InvalidStateError:
                return False
        elif name == "pause":
            await in_tx(db, lambda c: driver.jobs_pause(c, INSTANCE, types=PAUSABLE_TYPES, now=now))
        elif name == "resume":
            await in_tx(
                db, lambda c: driver.jobs_resume(c, INSTANCE, types=PAUSABLE_TYPES, now=now)
            )
        elif name == "cleanup":
            await in_tx(
                db,
                lambda c: driver.jobs_cancel_for_instance(
                    c, INSTANCE, types=CLEANUP_TYPES, now=now
                ),
            )
        elif name == "rescue":
            await in_tx(db, lambda c: driver.jobs_rescue(c, now=now))
        return True


@settings(
    max_examples=30,
    deadline=None,
    derandomize=True,  # the same sequences on every run and machine
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operations=OPERATIONS)
async def test_random_operations_keep_the_ledger_invariants(
    driver: LedgerDriver, db: Database, clock: ManualClock, operations: list[tuple[Any, ...]]
) -> None:
    async with db.begin() as conn:  # each example starts from an empty ledger
        for table in (workflow_job_effects, workflow_job_executions, workflow_jobs):
            await conn.execute(delete(table))
    run = Run(driver, db, clock)
    for op in PROLOGUE:
        await run.step(op)
    # the prologue's claim handed out work, or the settlements and renewals
    # below (honest and forged) would have nothing to act on and check nothing
    assert len(run.handles) == 3, run.handles
    for op in operations:
        await run.step(op)
