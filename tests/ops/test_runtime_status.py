"""The runtime status panel (SPEC L-23, seed 001 运行状态面板): every figure
from a known state with its exact number, on both backends. Rows are
inserted directly so every time is exact; ``now`` is the test clock's, except
where the database's own time is the point."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ops.runtime.status import percentile_cont, runtime_status
from tests.ops.rows import APPROVAL, add_execution, add_job, add_node
from tests.runtime_support import default_engine

S = timedelta(seconds=1)
MIN = timedelta(minutes=1)


async def test_empty_ledger_gives_zeros_and_nulls_L23(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    assert await runtime_status(db, now=now) == {
        "now": now,
        "liveWorkers": {"active": 0, "total": 0},
        "slots": {"inUse": 0, "capacity": 0},
        "inFlight": 0,
        "stuck": 0,
        "backlog": 0,
        "oldestQueuedSeconds": None,
        "queueP95Ms": None,
        "queueP99Ms": None,
        "dead": 0,
        "lastClaimAt": None,
        "failureRate1h": None,
        "avgDurationMs1h": None,
        "attempts1h": 0,
        "failedAttempts1h": 0,
        "pausedScopes": [],
    }


async def test_live_workers_and_slots_L23(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    ledger = {"workflow-ledger": 4}
    both = {"workflow-ledger": 4, "workflow-ledger-outbound": 4}
    # live and active
    await add_node(db, "fresh", heartbeat_at=now - 10 * S, pools=both, slots_in_use=3)
    await add_node(db, "edge-90s", heartbeat_at=now - 90 * S, pools=both, slots_in_use=1)
    # live, not active: stale heartbeat (2 min), or stopped
    await add_node(db, "stale", heartbeat_at=now - 2 * MIN, pools=ledger, slots_in_use=2)
    await add_node(db, "stopped", heartbeat_at=now - 30 * S, pools=ledger, status="stopped")
    await add_node(db, "edge-10m", heartbeat_at=now - 10 * MIN, pools=ledger, slots_in_use=1)
    # not live: dead (11 min), API-only, scheduler-only, no ledger pool
    await add_node(db, "dead", heartbeat_at=now - 11 * MIN, pools=both, slots_in_use=5)
    await add_node(db, "api", heartbeat_at=now, roles=["api"], pools=both, slots_in_use=1)
    await add_node(db, "sched", heartbeat_at=now, roles=["scheduler"], pools={})
    await add_node(db, "other", heartbeat_at=now, pools={"reports": 6}, slots_in_use=6)

    status = await runtime_status(db, now=now)
    assert status["liveWorkers"] == {"active": 2, "total": 5}
    assert status["slots"] == {"inUse": 3 + 1 + 2 + 0 + 1, "capacity": 8 + 8 + 4 + 4 + 4}

    clock.advance(seconds=1)  # the 90 s and 10 min edges fall out
    status = await runtime_status(db, now=clock.now())
    assert status["liveWorkers"] == {"active": 1, "total": 4}
    assert status["slots"] == {"inUse": 6, "capacity": 24}


async def test_in_flight_and_stuck_L23(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    deadline = now + 5 * MIN
    running = {"status": "running", "attempts": 1}
    await add_job(db, now, **running, lease_until=now + 30 * S, execution_deadline=deadline)
    await add_job(db, now, **running, lease_until=now, execution_deadline=deadline)
    # stuck: expired lease, missing lease, deadline passed, deadline reached
    await add_job(db, now, **running, lease_until=now - 1 * S, execution_deadline=deadline)
    await add_job(db, now, **running, lease_until=None, execution_deadline=deadline)
    await add_job(db, now, **running, lease_until=now + 30 * S, execution_deadline=now - S)
    await add_job(db, now, **running, lease_until=now + 30 * S, execution_deadline=now)
    # not running: never in flight or stuck, whatever their lease columns say
    await add_job(db, now, status="pending", lease_until=now - MIN)
    await add_job(db, now, status="dead", lease_until=None)

    status = await runtime_status(db, now=now)
    assert (status["inFlight"], status["stuck"]) == (6, 4)


async def test_stuck_uses_database_time_by_default_L23(db: Database, clock: ManualClock) -> None:
    real = datetime.now(UTC)  # the test clock is in 2026-01; the database's is now
    running = {"status": "running", "execution_deadline": real + timedelta(hours=1)}
    await add_job(db, clock.now(), **running, lease_until=real - timedelta(minutes=5))
    await add_job(db, clock.now(), **running, lease_until=real + timedelta(minutes=5))
    assert (await runtime_status(db))["stuck"] == 1
    assert (await runtime_status(db, now=clock.now()))["stuck"] == 0


async def test_backlog_and_oldest_queued_L23(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    await add_job(db, now, run_at=now - timedelta(seconds=120.5))
    await add_job(db, now, run_at=now - 30 * S)
    await add_job(db, now, run_at=now)  # due exactly now
    await add_job(db, now, run_at=now + S)  # a future runAt is not backlog
    await add_job(db, now, run_at=now - timedelta(hours=3), status="paused")
    await add_job(db, now, run_at=now - timedelta(hours=3), status="failed")
    status = await runtime_status(db, now=now)
    assert (status["backlog"], status["oldestQueuedSeconds"]) == (3, 120.5)

    earlier = now - 31 * S  # only the oldest job was due then
    status = await runtime_status(db, now=earlier)
    assert (status["backlog"], status["oldestQueuedSeconds"]) == (1, 89.5)


async def test_no_due_job_means_null_oldest_L23(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    await add_job(db, now, run_at=now + MIN)
    status = await runtime_status(db, now=now)
    assert (status["backlog"], status["oldestQueuedSeconds"]) == (0, None)


async def test_human_tasks_are_not_backlog_L23(db: Database, clock: ManualClock) -> None:
    engine = default_engine(db, clock)
    await engine.deploy(APPROVAL, actor="root")
    await engine.start("leave", form={}, initiator="ann")  # a pending approval task
    status = await runtime_status(db, now=clock.now() + timedelta(days=30))
    assert (status["backlog"], status["inFlight"], status["dead"]) == (0, 0, 0)


async def test_queue_percentiles_over_the_last_hour_L23(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    job = await add_job(db, now, status="succeeded")
    due = now - 30 * MIN
    for seconds in range(1, 101):  # queue delays of 1 s … 100 s, inserted out of order
        delay = ((seconds * 37) % 100 + 1) * S
        await add_execution(db, job, scheduled_at=due, started_at=due + delay)
    # outside the hour: started 61 min ago, and after ``now``
    await add_execution(db, job, scheduled_at=now - 3 * 60 * MIN, started_at=now - 61 * MIN)
    await add_execution(db, job, scheduled_at=now - 2 * 60 * MIN, started_at=now + MIN)

    status = await runtime_status(db, now=now)
    # percentile_cont: position 0.95 * 99 = 94.05 → 95 s + 0.05 s; 0.99 * 99 = 98.01
    assert (status["queueP95Ms"], status["queueP99Ms"]) == (95_050.0, 99_010.0)
    assert status["attempts1h"] == 100


async def test_queue_percentiles_interpolate_small_samples_L23(
    db: Database, clock: ManualClock
) -> None:
    now = clock.now()
    job = await add_job(db, now, status="succeeded")
    for delay_ms in (100, 200):
        due = now - 10 * MIN
        await add_execution(
            db, job, scheduled_at=due, started_at=due + timedelta(milliseconds=delay_ms)
        )
    status = await runtime_status(db, now=now)
    assert (status["queueP95Ms"], status["queueP99Ms"]) == (195.0, 199.0)


def test_python_percentile_matches_postgres_definition() -> None:
    assert percentile_cont([], 0.95) is None
    assert percentile_cont([7.0], 0.99) == 7.0
    assert percentile_cont([4.0, 1.0, 3.0, 2.0], 0.5) == 2.5
    assert round(percentile_cont([float(i) for i in range(1, 101)], 0.95) or 0, 6) == 95.05


async def test_dead_count_L23(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    for status in ("dead", "dead", "dead", "failed", "canceled", "succeeded", "pending"):
        await add_job(db, now, status=status)
    assert (await runtime_status(db, now=now))["dead"] == 3


async def test_last_claim_is_the_latest_attempt_start_L23(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    job = await add_job(db, now, status="succeeded")
    for hours in (3, 2, 5):
        started = now - timedelta(hours=hours)
        await add_execution(db, job, scheduled_at=started, started_at=started)
    status = await runtime_status(db, now=now)
    assert status["lastClaimAt"] == now - timedelta(hours=2)
    # older than an hour: no rate, no average, no percentiles — but a last claim
    assert status["failureRate1h"] is None and status["avgDurationMs1h"] is None
    assert status["queueP95Ms"] is None and status["queueP99Ms"] is None


async def test_failure_rate_and_average_duration_L23(db: Database, clock: ManualClock) -> None:
    now = clock.now()
    job = await add_job(db, now, status="running")
    at = now - 20 * MIN
    for status, duration in [
        ("succeeded", 100),
        ("failed", 301),
        ("skipped", 200),
        ("running", None),
        ("canceled", None),
    ]:
        await add_execution(
            db, job, scheduled_at=at, started_at=at, status=status, duration_ms=duration
        )
    old = now - 2 * 60 * MIN  # outside the hour: neither counted nor averaged
    await add_execution(
        db, job, scheduled_at=old, started_at=old, status="failed", duration_ms=10**6
    )

    status = await runtime_status(db, now=now)
    assert status["failureRate1h"] == 1 / 5
    assert status["avgDurationMs1h"] == 200.333  # (100 + 301 + 200) / 3
    assert (status["attempts1h"], status["failedAttempts1h"]) == (5, 1)


async def test_average_duration_is_null_without_durations_L23(
    db: Database, clock: ManualClock
) -> None:
    now = clock.now()
    job = await add_job(db, now, status="running")
    await add_execution(db, job, scheduled_at=now, started_at=now, status="running")
    status = await runtime_status(db, now=now)
    assert (status["failureRate1h"], status["avgDurationMs1h"]) == (0.0, None)
