"""The health inspection's counts without its rows (SPEC O-16, O-22), on
both backends: on one hand-built state with problems of several rules and
both levels — one task matched by three rules (counted once, by the
critical one), a job problem that hides its instance's ``instance_stalled``,
an instance-level outbox problem — :func:`problem_counts` equals the
summary of the full inspection, for every scope, and the engine health
score (the alert metric and the history's figure) equals the score of the
inspection's problems."""

from __future__ import annotations

from datetime import timedelta

from sqlalchemy import delete, insert

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs
from flowledger.ops.health.counts import problem_counts
from flowledger.ops.health.inspection import inspect, page, summarize
from flowledger.ops.health.page import problem_page
from flowledger.ops.health.rules import RuleParams
from flowledger.ops.health.saturation import caps_reached
from flowledger.ops.health.score import (
    engine_health_score,
    engine_health_score_value,
    health_score_of,
    score_from,
)
from flowledger.ops.runtime.status import runtime_figures
from tests.integration.engine_helpers import jobs, new_engine, tokens
from tests.ops.health_support import (
    approval_flow,
    consume_tokens,
    dead_end_flow,
    delay_flow,
    flush_events,
)
from tests.ops.rows import job_row

MIN = 60


async def _state(db: Database, clock: ManualClock) -> dict[str, int]:
    engine = new_engine(db, clock)
    notify = {"after": "PT15M", "action": "notify"}
    await engine.deploy(approval_flow(), actor="a")
    await engine.deploy(approval_flow("timed", timeout=notify), actor="a")
    await engine.deploy(dead_end_flow(), actor="a")
    await engine.deploy(delay_flow(duration="PT2H"), actor="a")
    ids = {
        # token_task_mismatch + task_timeout_overdue + waiting_task_stuck
        "mismatch": await engine.start("timed", form={}, initiator="u"),
        "overdue": await engine.start("timed", form={}, initiator="u"),  # timeout overdue
        "stuck": await engine.start("leave", form={}, initiator="u"),  # waiting_task_stuck
        "stalled": await engine.start("dead", form={"amount": 1}, initiator="u"),
        # a failed external dispatch without a task at the dead end's node
        "hidden": await engine.start("dead", form={"amount": 2}, initiator="u"),
        "lost": await engine.start("wait", form={}, initiator="u"),  # delay_missing_wake_job
    }
    await flush_events(db, clock)
    await consume_tokens(db, ids["mismatch"])
    (active,) = await tokens(db, ids["hidden"], "active")
    async with db.begin() as conn:
        await conn.execute(delete(workflow_jobs).where(workflow_jobs.c.instance_id == ids["lost"]))
        await conn.execute(
            insert(workflow_jobs).values(
                job_row(
                    clock.now(),
                    type="external_dispatch",
                    status="failed",
                    instance_id=ids["hidden"],
                    node_key=active["node_key"],
                    last_error_code="http_500",
                )
            )
        )
    # its outbox rows stay pending past the threshold
    ids["unsent"] = await engine.start("leave", form={}, initiator="u")
    clock.advance(seconds=40 * MIN)
    return ids


async def test_counts_equal_the_inspection_summary_O16(db: Database, clock: ManualClock) -> None:
    ids = await _state(db, clock)
    now = clock.now()
    async with db.read() as conn:
        problems = await inspect(conn, now=now)
        fast = await problem_counts(conn, now=now)
        assert fast == summarize(problems)
        by_instance = {p.instance_id: p.rule for p in problems if p.rule != "waiting_task_stuck"}
        assert by_instance[ids["mismatch"]] == "token_task_mismatch"
        assert by_instance[ids["hidden"]] == "external_dispatch_failed"
        assert {k: v for k, v in fast["byRule"].items() if v} == {
            "token_task_mismatch": 1,
            "external_dispatch_failed": 1,
            "delay_missing_wake_job": 1,
            "task_timeout_overdue": 1,
            "waiting_task_stuck": 2,
            "instance_stalled": 1,
            "workflow_event_outbox_pending": 1,
        }
        assert fast["byLevel"] == {"critical": 4, "warning": 4}
        for scope in (
            {"tenants": ["default"]},
            {"tenants": ["elsewhere"]},
            {"definition_key": "timed"},
            {"definition_key": "dead"},
            {"threshold": timedelta(minutes=10)},
            {"threshold": timedelta(minutes=1440)},
        ):
            full = summarize(await inspect(conn, now=now, **scope))  # type: ignore[arg-type]
            assert await problem_counts(conn, now=now, **scope) == full, scope  # type: ignore[arg-type]
    # the dead job rows and the job timeouts are untouched by the counting
    assert len(await jobs(db, ids["overdue"], type="task_timeout")) == 1


async def test_engine_health_score_equals_the_inspection_score_O16_O22(
    db: Database, clock: ManualClock
) -> None:
    await _state(db, clock)
    now = clock.now()
    async with db.read() as conn:
        full = health_score_of(await inspect(conn, now=now), await runtime_figures(conn, now))
        fast = await engine_health_score(conn, None, now=now)
        scoped = await engine_health_score(conn, ["default"], now=now)
        elsewhere = await engine_health_score(conn, ["elsewhere"], now=now)
    assert fast == full and scoped == full
    async with db.read() as conn:  # not at the caps: counted
        assert not await caps_reached(conn, RuleParams(now=now))
        runtime = await runtime_figures(conn, now)
        assert await engine_health_score_value(conn, None, now=now, runtime=runtime) == full.score
    # 4 critical (20 points) and 4 warning (4 points); no dead or stuck job
    assert fast.points["critical"] == 20 and fast.points["warning"] == 4
    assert fast.score == 100 - sum(fast.points.values()) < 80
    assert elsewhere.by_level == {"critical": 0, "warning": 0}


async def test_sql_page_equals_the_inspection_page_O16(db: Database, clock: ManualClock) -> None:
    """:func:`problem_page` (one statement) gives the items and keyset of
    ``page(inspect(…))`` and its summary: every filter, every scope, page
    after page."""
    await _state(db, clock)
    now = clock.now()
    async with db.read() as conn:
        for scope in ({}, {"tenants": ["elsewhere"]}, {"threshold": timedelta(minutes=10)}):
            problems = await inspect(conn, now=now, **scope)  # type: ignore[arg-type]
            assert len(problems) > 3 or scope
            for filters in ({}, {"level": "warning"}, {"rule": "waiting_task_stuck"}):
                after = None
                while True:
                    want = page(problems, after=after, limit=3, **filters)  # type: ignore[arg-type]
                    got = await problem_page(
                        conn, now=now, after=after, limit=3, **scope, **filters
                    )  # type: ignore[arg-type]
                    assert (got.items, got.next) == want, (scope, filters, after)
                    assert got.summary == summarize(problems)
                    after = got.next
                    if after is None:
                        break


async def test_score_value_without_counting_at_the_caps_O16_O22(
    db: Database, clock: ManualClock
) -> None:
    """8 critical problems (dead webhook deliveries of 8 instances) and 16
    warning ones (stuck approvals): both deductions at their caps, the
    alert metric's score is the counted score without counting; one
    critical problem fewer and it is counted."""
    engine = new_engine(db, clock)
    await engine.deploy(approval_flow(), actor="a")
    ids = [await engine.start("leave", form={}, initiator="u") for _ in range(16)]
    await flush_events(db, clock)
    async with db.begin() as conn:
        for instance_id in ids[:8]:
            row = job_row(clock.now(), status="dead", instance_id=instance_id)
            await conn.execute(insert(workflow_jobs).values(row))
    clock.advance(seconds=40 * MIN)
    now = clock.now()
    async with db.read() as conn:
        runtime = await runtime_figures(conn, now)
        full = await engine_health_score(conn, None, now=now, runtime=runtime)
        assert full.by_level == {"critical": 8, "warning": 16}
        assert await caps_reached(conn, RuleParams(now=now))
        assert await engine_health_score_value(conn, None, now=now, runtime=runtime) == full.score
        assert not await caps_reached(conn, RuleParams(now=now, tenants=["elsewhere"]))
    # the caps: more problems change nothing
    many = {"critical": 1000, "warning": 1000}
    assert score_from(many, runtime) == score_from(full.by_level, runtime)
    async with db.begin() as conn:
        await conn.execute(delete(workflow_jobs).where(workflow_jobs.c.instance_id == ids[0]))
    async with db.read() as conn:
        assert not await caps_reached(conn, RuleParams(now=now))
        runtime = await runtime_figures(conn, now)
        full = await engine_health_score(conn, None, now=now, runtime=runtime)
        assert full.by_level["critical"] == 7
        assert await engine_health_score_value(conn, None, now=now, runtime=runtime) == full.score
