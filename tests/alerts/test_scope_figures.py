"""The alert metrics' job and attempt figures of several scopes read at once
(SPEC O-22, L-23; issue 34 item 3), on both backends: for every scope —
every job, one tenant, a tenant without jobs — they equal the runtime
status panel's own figures of that scope, on jobs of several tenants (and
none) in every state the figures tell apart, and attempts inside and
outside the last hour."""

from __future__ import annotations

from datetime import timedelta

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ops.alerts.figures import attempt_figures_of, job_figures_of
from flowledger.ops.alerts.metrics import measure
from flowledger.ops.runtime.status import attempt_figures, job_figures
from tests.ops.rows import add_execution, add_job


async def test_scope_figures_equal_the_status_panel_figures_O22(
    db: Database, clock: ManualClock
) -> None:
    now = clock.now()
    ago = now - timedelta(minutes=20)
    for tenant in ("acme", "globex", None):
        await add_job(db, ago, tenant_id=tenant)  # due
        await add_job(db, now + timedelta(hours=1), tenant_id=tenant)  # not due
        await add_job(db, ago, tenant_id=tenant, status="dead")
        await add_job(db, ago, tenant_id=tenant, status="failed")
        await add_job(db, ago, tenant_id=tenant, status="running", lease_until=ago)  # stuck
        fine = await add_job(
            db, ago, tenant_id=tenant, status="running", lease_until=now + timedelta(minutes=5)
        )
        for minutes, status in ((10, "failed"), (30, "succeeded"), (90, "failed")):
            started = now - timedelta(minutes=minutes)
            await add_execution(db, fine, scheduled_at=started, started_at=started, status=status)
    await add_job(db, now - timedelta(hours=2), tenant_id="acme")  # acme's oldest due
    scopes = [None, ("acme",), ("globex",), ("nobody",), ("acme", "globex")]
    async with db.read() as conn:
        jobs = await job_figures_of(conn, now, scopes)
        attempts = await attempt_figures_of(conn, now, scopes)
        for scope in scopes:
            tenants = None if scope is None else list(scope)
            want = await job_figures(conn, now, tenants)
            assert jobs[scope] == {k: v for k, v in want.items() if k != "lastClaimAt"}, scope
            want = await attempt_figures(conn, now, tenants)
            del want["avgDurationMs1h"]
            assert attempts[scope] == want, scope
        assert jobs[("acme",)]["stuck"] == 1 and jobs[None]["dead"] == 3
        assert attempts[None]["attempts1h"] == 6 and attempts[("acme",)]["failedAttempts1h"] == 1
        values = await measure(
            conn,
            [("queue_backlog", "acme"), ("queue_backlog", None), ("stuck_jobs", "nobody")],
            now=now,
        )
    assert values == {
        ("queue_backlog", "acme"): 2.0,
        ("queue_backlog", None): 4.0,
        ("stuck_jobs", "nobody"): 0.0,
    }
