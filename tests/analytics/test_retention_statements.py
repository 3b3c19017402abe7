"""What a retention batch sends (issue 34 item 2, SPEC O-20), on both
backends: a tokens or trace batch is one ``DELETE … RETURNING`` of a locked,
limited selection, and the walk's bound (the bisection of the primary key)
is found once per run, not once per batch; a jobs batch sends its ids as one
array parameter on PostgreSQL, not one parameter per id, and has its
statements planned with its own values (a generic plan of the prepared
attempts ``DELETE`` read the whole slack range of the ``started_at`` index)."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from flowledger.db.database import Database
from flowledger.ops.retention import runs as ops
from tests import statement_watch
from tests.analytics.rows import add_instance, add_job, add_trace
from tests.ops.rows import add_execution

NOW = datetime(2026, 6, 15, 12, 0, tzinfo=UTC)
D = timedelta(days=1)


def _starting(seen: list[str], prefix: str) -> list[str]:
    return [s for s in seen if " ".join(s.split()).startswith(prefix)]


async def test_a_trace_batch_is_one_statement_and_the_bound_is_found_once_O20(
    db: Database,
) -> None:
    instance = await add_instance(
        db, "leave", created_at=NOW - 201 * D, status="approved", finished_at=NOW - 200 * D
    )
    for _ in range(7):
        await add_trace(db, instance, created_at=NOW - 201 * D)
    with statement_watch.watched(db) as seen:
        run = await ops.run_retention(
            db, now=NOW, trigger="manual", actor="t", policies=["workflow_trace"], batch_size=3
        )
    [item] = run["items"]
    assert (item["tables"], item["batches"]) == ({"workflow_trace": 7}, 4)  # 3, 3, 1, none
    assert len(_starting(seen, "DELETE FROM workflow_trace")) == 4
    assert _starting(seen, "SELECT workflow_trace.id FROM") == []  # no separate selection
    assert len(_starting(seen, "SELECT min(workflow_trace.id)")) == 1


async def test_a_jobs_batch_sends_its_ids_as_one_parameter_on_postgresql_O20(
    db: Database,
) -> None:
    old = NOW - 40 * D
    for _ in range(5):
        job = await add_job(db, old, status="succeeded", updated_at=old)
        await add_execution(db, job, scheduled_at=old, started_at=old)
    with statement_watch.watched(db) as seen:
        run = await ops.run_retention(
            db, now=NOW, trigger="manual", actor="t", policies=["workflow_jobs"], batch_size=3
        )
    [item] = run["items"]
    assert item["tables"]["workflow_jobs"] == 5
    deletes = _starting(seen, "DELETE FROM workflow_job")
    assert len(deletes) == 6  # two batches: attempts, receipts, jobs
    if not db.is_sqlite:
        # the same text for a batch of 3 and of 2: one array, not 3 or 2 parameters
        assert all("= ANY" in s for s in deletes)
        assert len(set(deletes)) == 3
        assert len(_starting(seen, "SET LOCAL plan_cache_mode = force_custom_plan")) == 2
