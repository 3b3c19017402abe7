"""Issue 17 item 7 (SPEC L-25), broad keywords: the job list looks for a
keyword page among the newest ``KEYWORD_WINDOW`` jobs first (one short
id-descending walk, ``bench/keyword_search.py`` has the 1M-row figures) and
falls back to the trigram query when that window holds too few matches. Every
page, with and without other filters, is exactly what the plain filter gives,
and a broad keyword is answered by the window query alone. Both backends."""

from __future__ import annotations

import pytest
from sqlalchemy import select

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.jobs import queries as job_queries
from flowledger.ops.jobs.filters import JobFilter
from tests import statement_watch
from tests.integration.ledger_helpers import add_job, force_status

WINDOW = 8


async def _fill(db: Database, clock: ManualClock) -> None:
    for i in range(40):
        job_id = await add_job(db, clock.now())
        # old jobs (the first 6) carry a rare error, every third a broad one
        error = f"rare glitch {i}" if i < 6 else f"HTTP 503 from erp-{i}" if i % 3 else None
        await force_status(db, job_id, "dead" if i % 2 else "failed", last_error=error)


async def _reference(db: Database, flt: JobFilter) -> list[int]:
    query = flt.apply(select(jobs.c.id)).order_by(jobs.c.id.desc())
    async with db.read() as conn:
        return list((await conn.execute(query)).scalars().all())


async def _pages(db: Database, flt: JobFilter, limit: int) -> list[int]:
    ids: list[int] = []
    cursor = None
    while True:
        page = await job_queries.list_jobs(db, flt, limit=limit, cursor=cursor)
        ids += [item["id"] for item in page["items"]]
        cursor = page["next"]
        if cursor is None:
            return ids


@pytest.fixture
def statements(db: Database, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    monkeypatch.setattr(job_queries, "KEYWORD_WINDOW", WINDOW)
    seen: list[str] = []
    statement_watch.listen(db, seen.append)  # for the test's lifetime
    return seen


@pytest.mark.parametrize(
    "flt",
    [
        JobFilter(keyword="erp"),
        JobFilter(keyword="ERP", statuses=("dead",)),
        JobFilter(keyword="rare"),
        JobFilter(keyword="glitch 3", tenants=("default",)),
        JobFilter(keyword="nothing at all"),
    ],
    ids=["broad", "broad-dead", "rare", "rare-tenant", "none"],
)
@pytest.mark.parametrize("limit", [1, 3, 50])
async def test_keyword_pages_equal_the_plain_filter_item7(
    db: Database, clock: ManualClock, statements: list[str], flt: JobFilter, limit: int
) -> None:
    await _fill(db, clock)
    assert await _pages(db, flt, limit) == await _reference(db, flt)


async def test_broad_keyword_is_served_by_the_window_alone_item7(
    db: Database, clock: ManualClock, statements: list[str]
) -> None:
    await _fill(db, clock)
    statements.clear()
    page = await job_queries.list_jobs(db, JobFilter(keyword="erp"), limit=3)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 1 and "recent" in selects[0], selects
    assert [item["id"] for item in page["items"]] == (
        await _reference(db, JobFilter(keyword="erp"))
    )[:3]
    # a rare keyword: the window holds too few, the trigram query answers
    statements.clear()
    page = await job_queries.list_jobs(db, JobFilter(keyword="rare"), limit=3)
    selects = [s for s in statements if s.lstrip().upper().startswith("SELECT")]
    assert len(selects) == 2 and "recent" not in selects[1], selects
    assert len(page["items"]) == 3
