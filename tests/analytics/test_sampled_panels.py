"""Analytics panels whose exact figures would read every row of months of
history (issue 34 item 3, SPEC O-14): above the exact-cost limit, PostgreSQL
computes them over a block sample of the table and names them in
``estimated`` (``estimatedStatuses`` for the totals' status counts); on
SQLite every figure is exact.

A test cannot hold months of history, so the exact-cost limit is set below
any plan's cost: every figure that can be sampled is. The page budget is
set above any table's size (a worker's database keeps the pages of the
tests before this one: at the real budget a table grown past 600 pages
gave a sample without this test's rows), so the sample is the whole table
and the sampled figures equal the exact ones of test_analytics_api — the
statements, the sample clause and the scaling are the real ones."""

from __future__ import annotations

import pytest

from flowledger.db import count_estimates
from flowledger.ops.analytics import sampling
from tests.analytics.test_analytics_api import _get, data  # noqa: F401
from tests.api.conftest import Api, People


@pytest.fixture
def sampled(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(count_estimates, "EXACT_COST_LIMIT", -1.0)
    monkeypatch.setattr(sampling, "PAGE_BUDGET", 10**9)


@pytest.mark.usefixtures("data", "sampled")
async def test_totals_sampled_and_marked_O14(api: Api, people: People) -> None:
    body = await _get(api, people, "totals")
    assert (body["finished"], body["avgDurationMs"]) == (3, 7_200_000)
    assert body["pendingTasks"] == 4 and body["startsLast7Days"] == 4
    if api.db.is_sqlite:
        assert (body["estimated"], body["estimatedStatuses"]) == ([], [])
        assert body["instances"] == 6
        return
    assert body["estimated"] == ["avgDurationMs", "finished", "instances"]
    # each status is the planner's row estimate: named, never shown as exact
    assert body["estimatedStatuses"] == sorted(body["instancesByStatus"])
    assert body["instances"] == sum(body["instancesByStatus"].values())


@pytest.mark.usefixtures("data", "sampled")
async def test_period_panels_sampled_and_marked_O14(api: Api, people: People) -> None:
    top = await _get(api, people, "top-definitions")
    assert [(i["definitionKey"], i["total"], i["approved"]) for i in top["items"]] == [
        ("leave", 3, 1),
        ("expense", 2, 1),
        ("sub", 1, 0),
    ]
    nodes = await _get(api, people, "node-bottlenecks")
    leave = next(i for i in nodes["items"] if i["definitionKey"] == "leave")
    assert (leave["handled"], leave["avgHandlingMs"], leave["p90HandlingMs"]) == (
        3,
        5_400_000,
        9_360_000,
    )
    assert leave["backlog"] == 2  # pending now: always counted
    load = await _get(api, people, "approver-workload")
    mia = next(i for i in load["items"] if i["assignee"] == "mia")
    assert (mia["pending"], mia["handled"], mia["avgHandlingMs"]) == (1, 2, 7_200_000)
    marks = [top["estimated"], nodes["estimated"], load["estimated"]]
    if api.db.is_sqlite:
        assert marks == [[], [], []]
    else:
        assert marks == [
            ["total", "running", "approved", "rejected", "avgDurationMs"],
            ["handled", "avgHandlingMs", "p90HandlingMs"],
            ["handled", "avgHandlingMs"],
        ]
