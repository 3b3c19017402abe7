"""Preview and run of an instance migration over N running instances
(issue 30's bar: counts and samples within seconds for 10,000 instances).

    python bench/instance_migration.py --db URL --instances 10000

The database at URL is migrated; a definition ``bench_mig`` gets two new
versions (an approval ``review``, all of ann and bob, renamed ``check`` with
cat added, and a delay after it) and N instances started on the first, each
with one approval given (so the dry run recomputes assignees for every one).
Times :func:`flowledger.ops.migration.service.preview` and
:func:`~flowledger.ops.migration.service.run` (every instance in its own
transaction). Last line: ``preview_s=… run_s=… migrated=…``.
"""

from __future__ import annotations

import argparse
import asyncio
import time
import uuid
from typing import Any

from flowledger.clock import SystemClock
from flowledger.db.database import Database
from flowledger.db.migrate import upgrade
from flowledger.engine import Engine
from flowledger.ops.migration import service
from flowledger.ops.migration.model import MigrationPlan


def _definition(key: str, review: str, people: list[str], extra: bool) -> dict[str, Any]:
    nodes: list[dict[str, Any]] = [
        {"key": "start", "type": "start"},
        {"key": review, "type": "approval", "mode": "all", "assignees": {"users": people}},
        {"key": "end", "type": "end"},
    ]
    edges = [{"from": "start", "to": review}]
    if extra:
        nodes.append({"key": "cool", "type": "delay", "duration": "PT1H"})
        edges += [{"from": review, "to": "cool"}, {"from": "cool", "to": "end"}]
    else:
        edges.append({"from": review, "to": "end"})
    return {"key": key, "name": key, "nodes": nodes, "edges": edges}


async def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--db", required=True)
    parser.add_argument("--instances", type=int, default=10_000)
    args = parser.parse_args()
    db = Database(args.db)
    await upgrade(db)
    engine = Engine(db, SystemClock())
    key = f"bench_mig_{uuid.uuid4().hex[:6]}"
    v1 = await engine.deploy(_definition(key, "review", ["ann", "bob"], False), actor="bench")
    v2 = await engine.deploy(_definition(key, "check", ["ann", "bob", "cat"], True), actor="bench")
    t0 = time.perf_counter()
    ids = []
    for _ in range(args.instances):
        iid = await engine.start(key, form={}, initiator="ira", version=v1["version"])
        ids.append(iid)
    print(f"started {len(ids)} instances in {time.perf_counter() - t0:.1f} s")
    plan = MigrationPlan(
        definition_key=key,
        from_versions=(v1["version"],),
        to_version=v2["version"],
        reason="bench",
        mapping={"review": "check"},
    )
    t0 = time.perf_counter()
    found = await service.preview(db, plan, actor="bench", clock=engine.clock)
    preview_s = time.perf_counter() - t0
    print(f"preview: {len(found.results)} instances, {found.counts()} in {preview_s:.2f} s")
    t0 = time.perf_counter()
    migration_id = await service.run(db, engine.store, plan, actor="bench", clock=engine.clock)
    run_s = time.perf_counter() - t0
    done = await service.progress(db, migration_id, limit=1)
    print(f"run: {done['progress']} in {run_s:.2f} s")
    migrated = done["progress"]["byOutcome"].get("migrated", 0)
    print(f"preview_s={preview_s:.2f} run_s={run_s:.2f} migrated={migrated}")
    await db.dispose()


if __name__ == "__main__":
    asyncio.run(main())
