"""Issue 17 item 7 (SPEC L-24, L-25): keyword filters are literal — ``%``,
``_`` and ``\\`` in a keyword match themselves (``keyword=%`` used to match
every job, so a conditional replay with it replayed every dead job) — and on
PostgreSQL the filter is served by the trigram indexes of migration 0012."""

from __future__ import annotations

import pytest
from sqlalchemy import select, text

from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.like import escape_like
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ops.jobs.filters import JobFilter
from tests.integration.ledger_helpers import add_job, force_status

ERRORS = {
    "plain": "connection refused by erp",
    "percent": "quota at 100% for tenant",
    "under": "field user_id missing",
    "slash": "path C:\\temp not found",
}


async def _jobs(db: Database, clock: ManualClock) -> dict[str, int]:
    ids = {}
    for name, error in ERRORS.items():
        ids[name] = await add_job(db, clock.now())
        await force_status(db, ids[name], "dead", last_error=error)
    return ids


async def _match(db: Database, keyword: str) -> set[int]:
    query = JobFilter(keyword=keyword).apply(select(jobs.c.id))
    async with db.read() as conn:
        return set((await conn.execute(query)).scalars().all())


@pytest.mark.parametrize(
    ("keyword", "expected"),
    [
        ("%", {"percent"}),
        ("100%", {"percent"}),
        ("_id", {"under"}),
        ("user_id", {"under"}),
        ("d_m", set()),  # "_" is not "any one character" ("d m" of "id missing")
        ("\\", {"slash"}),
        ("%%", set()),
        ("REFUSED", {"plain"}),
    ],
)
async def test_keyword_is_a_literal_substring_item7(
    db: Database, clock: ManualClock, keyword: str, expected: set[str]
) -> None:
    ids = await _jobs(db, clock)
    assert await _match(db, keyword) == {ids[name] for name in expected}


def test_escape_like() -> None:
    assert escape_like("a%b_c\\d") == "a\\%b\\_c\\\\d"


async def test_keyword_filter_uses_the_trigram_indexes_on_postgresql_item7(
    db: Database, clock: ManualClock, backend: str
) -> None:
    if backend != "postgresql":
        pytest.skip("trigram indexes exist on PostgreSQL only")
    await _jobs(db, clock)
    query = JobFilter(keyword="refused").apply(select(jobs.c.id))
    async with db.begin() as conn:
        await conn.execute(text("SET LOCAL enable_seqscan = off"))
        compiled = query.compile(conn.sync_connection, compile_kwargs={"literal_binds": True})
        plan = "\n".join((await conn.execute(text(f"EXPLAIN {compiled}"))).scalars().all())
    assert "ix_workflow_jobs_last_error_trgm" in plan, plan
    assert "ix_workflow_jobs_type_trgm" in plan, plan
