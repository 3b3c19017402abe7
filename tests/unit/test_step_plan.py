"""The step plan's fixed shapes (issue 28 item 1): which shape writes a plan,
how its jobs are batched, and how a held fork's moved tokens fold in. The
statements of each shape are proved on both backends by
tests/integration/test_step_rows_with_settlement.py,
test_step_rows_ride_on_job_insert.py and the engine conformance suite."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from flowledger.engine.store.plan import (
    PlannedJob,
    PlannedSettlement,
    StepPlan,
    commit_shape,
)
from flowledger.ledger.models import Fence, JobSpec, Outcome, OutcomeKind

T0 = datetime(2026, 1, 1, tzinfo=UTC)
T1 = T0 + timedelta(seconds=1)


def _job(now: datetime, reserved: int | None) -> PlannedJob:
    return PlannedJob(JobSpec(type="x"), now, {"event": "job_enqueued"}, reserved)


def test_a_job_step_plan_is_written_with_its_settlement() -> None:
    settlement = PlannedSettlement(
        Fence(1, 1, "t", 1, T0), "op", "step", None, Outcome(OutcomeKind.SUCCESS), T0, None
    )
    plan = StepPlan(jobs=[_job(T0, 7)])
    assert commit_shape(plan, settlement) == "settle"


def test_jobs_all_reserved_at_one_reading_go_with_the_rows() -> None:
    plan = StepPlan(jobs=[_job(T0, 7), _job(T0, 8)])
    assert plan.reserved_job_ids() == [7, 8]
    assert commit_shape(plan, None) == "jobs_and_rows"


def test_a_job_without_a_reserved_id_or_two_readings_goes_first() -> None:
    assert commit_shape(StepPlan(jobs=[_job(T0, 7), _job(T0, None)]), None) == "jobs_then_rows"
    assert commit_shape(StepPlan(jobs=[_job(T0, 7), _job(T1, 8)]), None) == "jobs_then_rows"
    assert commit_shape(StepPlan(), None) == "jobs_then_rows"
    assert not StepPlan()


def test_job_batches_group_by_reading_and_reservation_in_first_order() -> None:
    a, b, c, d = _job(T0, 1), _job(T0, None), _job(T1, None), _job(T0, 2)
    plan = StepPlan(jobs=[a, b, c, d])
    assert plan.take_job_batches() == [[a, d], [b], [c]]
    assert plan.jobs == []


def test_a_held_forks_token_that_moved_is_inserted_where_it_is() -> None:
    plan = StepPlan()
    plan.rows.forks.tokens.append({"id": 5, "node_key": "fork", "state": "active"})
    plan.rows.moves.update({5: "join", 6: "elsewhere"})
    plan.rows.parks.add(5)
    plan.fold_moves()
    assert plan.rows.forks.tokens == [{"id": 5, "node_key": "join", "state": "parked"}]
    assert plan.rows.moves == {6: "elsewhere"} and plan.rows.parks == set()
