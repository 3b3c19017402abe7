"""The reusable monitoring filler (``bench/monitor_fill.py``, issue 10): the
rows it bulk inserts are consistent instances — ~10 tasks, 8 tokens, 30
trace rows and 5 jobs each, exactly one active token and one pending task
while live, none once finished — with real snapshots, ids continuing after
what the tables already hold, on both backends."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime

from bench.monitor_fill import fill_instances
from sqlalchemy import func, select

from flowledger.db.database import Database
from flowledger.db.engine_schema import (
    workflow_instances,
    workflow_tasks,
    workflow_tokens,
    workflow_trace,
)
from flowledger.db.schema import workflow_jobs


async def _per_instance(db: Database, table: object, *where: object) -> Counter[int]:
    t = table.c  # type: ignore[attr-defined]
    query = select(t.instance_id, func.count()).where(*where).group_by(t.instance_id)
    async with db.read() as conn:
        return Counter({int(i): int(n) for i, n in (await conn.execute(query)).all()})


async def test_fill_makes_consistent_instances(db: Database) -> None:
    now = datetime.now(UTC)
    first = await fill_instances(db, 120, now=now, tenants=("acme", "globex"))
    second = await fill_instances(db, 30, now=now, tenants=("acme",), seed=8)
    assert (first.instances, first.tasks, first.tokens, first.trace, first.jobs) == (
        120,
        1200,
        960,
        3600,
        600,
    )
    assert second.first_id == 121
    async with db.read() as conn:
        rows = (await conn.execute(select(workflow_instances))).mappings().all()
    assert len(rows) == 150 and {r["tenant_id"] for r in rows} == {"acme", "globex"}
    assert {r["status"] for r in rows} >= {"running", "approved"}
    assert all(r["snapshot"]["key"] == "bench_purchase" for r in rows)
    assert all(r["created_at"] <= r["updated_at"] <= now for r in rows)
    for table in (workflow_tasks, workflow_tokens, workflow_trace, workflow_jobs):
        counts = await _per_instance(db, table)
        assert set(counts) == {r["id"] for r in rows}, table.name
    active = await _per_instance(db, workflow_tokens, workflow_tokens.c.state == "active")
    pending = await _per_instance(db, workflow_tasks, workflow_tasks.c.status == "pending")
    for row in rows:
        live = row["status"] in ("running", "suspended")
        assert active[row["id"]] == (1 if live else 0)
        assert pending[row["id"]] == (1 if live else 0)
        assert (row["finished_at"] is None) == live
