"""Counts that would read millions of rows are the planner's estimate, marked
as such (issue 34 item 3): ``GET /instances/counts``, ``GET
/engine/jobs/summary``, the engine diagnostics' queue and the analytics'
async health count a cheap status exactly and report an expensive one as
PostgreSQL's ``EXPLAIN`` row estimate, naming it in ``estimatedStatuses``
with ``estimated`` true. On SQLite (the embedded default) every figure is
counted.

A test cannot hold millions of rows, so the cost limit is set between what
the real planner says counting the small statuses and the big one costs on
the rows written here: the planner, its statistics and the queries are the
real ones."""

from __future__ import annotations

from typing import Any

import pytest
from sqlalchemy import insert, select, text

from flowledger.db import count_estimates
from flowledger.db.count_estimates import planned
from flowledger.db.engine_schema import workflow_instances
from flowledger.db.schema import workflow_jobs as jobs
from tests.api.conftest import Api, People, approval
from tests.ops.rows import add_jobs, job_row

BIG = 3000  # succeeded jobs / approved instances: the figure the planner estimates
JOBS = "/engine/jobs"


async def _analyze(api: Api) -> None:
    async with api.db.begin() as conn:
        await conn.execute(text("ANALYZE"))


async def _limit_between(api: Api, table: Any, cheap: str, costly: str) -> float:
    """A cost limit the planner puts between counting ``cheap`` and ``costly``."""
    async with api.db.read() as conn:
        low = await planned(conn, select(table.c.id).where(table.c.status == cheap))
        high = await planned(conn, select(table.c.id).where(table.c.status == costly))
    assert low.cost < high.cost, (low, high)
    return (low.cost + high.cost) / 2


async def test_job_summary_estimates_the_costly_status_only(
    api: Api, people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = api.clock.now()
    rows = [job_row(now, type="webhook_delivery", status="succeeded") for _ in range(BIG)]
    rows += [job_row(now, type="webhook_delivery", status="dead") for _ in range(5)]
    rows += [job_row(now, type="delay_wake", status="pending") for _ in range(2)]
    await add_jobs(api.db, rows)
    await _analyze(api)
    if api.db.is_sqlite:
        monkeypatch.setattr(count_estimates, "EXACT_COST_LIMIT", 0.0)
    else:
        limit = await _limit_between(api, jobs, "dead", "succeeded")
        monkeypatch.setattr(count_estimates, "EXACT_COST_LIMIT", limit)

    summary = (await api.get(JOBS + "/summary", people.root)).json()
    # the few dead and pending jobs are always counted exactly
    assert (summary["byStatus"]["dead"], summary["byStatus"]["pending"]) == (5, 2)
    webhook = next(t for t in summary["byType"] if t["type"] == "webhook_delivery")
    if api.db.is_sqlite:
        assert summary["estimated"] is False and summary["estimatedStatuses"] == []
        assert summary["byStatus"]["succeeded"] == BIG and webhook["estimatedStatuses"] == []
        return
    assert summary["estimated"] is True and summary["estimatedStatuses"] == ["succeeded"]
    assert abs(summary["byStatus"]["succeeded"] - BIG) <= BIG // 10
    assert webhook["estimatedStatuses"] == ["succeeded"]
    assert abs(webhook["byStatus"]["succeeded"] - BIG) <= BIG // 10
    assert webhook["byStatus"]["dead"] == 5
    wake = next(t for t in summary["byType"] if t["type"] == "delay_wake")
    assert wake["estimatedStatuses"] == [] and wake["byStatus"]["pending"] == 2
    # the engine diagnostics' queue chart marks the same cell
    queue = (await api.get("/engine/diagnostics", people.root)).json()["queue"]
    cells = {(c["type"], c["status"]): c for c in queue["byTypeStatus"]}
    assert cells[("webhook_delivery", "succeeded")]["estimated"] is True
    assert cells[("webhook_delivery", "dead")] == {
        "type": "webhook_delivery",
        "status": "dead",
        "count": 5,
        "estimated": False,
    }
    # and so do the analytics' async health panel's job counts
    health = (await api.get("/analytics/async-health", people.root)).json()
    rows = {j["type"]: j for j in health["jobs"]}
    assert rows["webhook_delivery"]["estimatedStatuses"] == ["succeeded"]
    assert rows["webhook_delivery"]["byStatus"]["dead"] == 5
    assert rows["delay_wake"]["estimatedStatuses"] == []


async def test_instance_counts_estimate_the_costly_status_only(
    api: Api, people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    await api.deploy(people.root, approval())
    running = await api.start(people.ann)
    async with api.db.begin() as conn:
        row = dict(
            (
                await conn.execute(
                    select(workflow_instances).where(workflow_instances.c.id == running["id"])
                )
            )
            .mappings()
            .one()
        )
        row.pop("id")
        copies = [{**row, "status": "approved", "trace_id": f"t-{n}"} for n in range(BIG)]
        for offset in range(0, BIG, 500):
            await conn.execute(insert(workflow_instances), copies[offset : offset + 500])
    await _analyze(api)
    if api.db.is_sqlite:
        monkeypatch.setattr(count_estimates, "EXACT_COST_LIMIT", 0.0)
    else:
        limit = await _limit_between(api, workflow_instances, "running", "approved")
        monkeypatch.setattr(count_estimates, "EXACT_COST_LIMIT", limit)

    body = (await api.get("/instances/counts", people.mon)).json()
    assert body["counts"]["running"] == 1
    if api.db.is_sqlite:
        assert body["estimated"] is False and body["estimatedStatuses"] == []
        assert body["counts"]["approved"] == BIG and body["total"] == BIG + 1
        return
    assert body["estimated"] is True and body["estimatedStatuses"] == ["approved"]
    assert abs(body["counts"]["approved"] - BIG) <= BIG // 10
    assert body["total"] == body["counts"]["approved"] + 1


async def test_replay_preview_counts_exactly_up_to_its_limit(
    api: Api, people: People, monkeypatch: pytest.MonkeyPatch
) -> None:
    now = api.clock.now()
    await add_jobs(api.db, [job_row(now, status="dead") for _ in range(BIG)])
    await _analyze(api)
    # past the replay's limit, more rows than this are the planner's estimate
    monkeypatch.setattr(count_estimates, "EXACT_ROW_LIMIT", BIG // 10)
    body = {"statuses": ["dead"], "limit": 10}
    shown = (await api.post(JOBS + "/replay-preview", people.root, body)).json()
    assert shown["wouldSubmit"] == 10  # exact either way
    if api.db.is_sqlite:
        assert (shown["matched"], shown["matchedEstimated"]) == (BIG, False)
        return
    assert shown["matchedEstimated"] is True
    assert abs(shown["matched"] - BIG) <= BIG // 10
    # when the planner expects few enough rows, they are counted
    monkeypatch.setattr(count_estimates, "EXACT_ROW_LIMIT", BIG * 2)
    small = (await api.post(JOBS + "/replay-preview", people.root, body)).json()
    assert (small["matched"], small["matchedEstimated"]) == (BIG, False)
