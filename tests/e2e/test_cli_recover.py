"""``flowledger recover ACTION`` as a user runs it (SPEC O-18): a subprocess
on a SQLite file — ``--preview --json`` lists what the run then touches,
the run retries only the action's job types, writes the ``recovery.run``
audit row and prints a table; an unknown action is exit code 2 naming the
valid ones; ``--min-age`` takes ``30m`` / ``2h`` style ages."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import select

from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit
from flowledger.db.schema import workflow_jobs as jobs
from tests.e2e.test_cli_jobs import cli
from tests.ops.rows import add_job


def _seed(tmp_path: Path) -> dict[str, int]:
    cli(tmp_path, "migrate")

    async def main() -> dict[str, int]:
        db = Database(f"sqlite:///{tmp_path / 'jobs.db'}")
        try:
            old = datetime.now(UTC) - timedelta(hours=3)
            new = datetime.now(UTC) - timedelta(minutes=5)
            return {
                "old_wake": await add_job(db, old, type="delay_wake", status="dead"),
                "new_wake": await add_job(db, new, type="delay_wake", status="dead"),
                "hook": await add_job(db, old, type="webhook_delivery", status="dead"),
            }
        finally:
            await db.dispose()

    return asyncio.run(main())


async def _rows(tmp_path: Path) -> tuple[dict[int, str], list[str]]:
    db = Database(f"sqlite:///{tmp_path / 'jobs.db'}")
    try:
        async with db.read() as conn:
            statuses = dict((await conn.execute(select(jobs.c.id, jobs.c.status))).all())
            audit = list((await conn.execute(select(operation_audit.c.action))).scalars())
        return statuses, audit
    finally:
        await db.dispose()


def test_recover_preview_then_run_O18(tmp_path: Path) -> None:
    ids = _seed(tmp_path)
    preview = cli(tmp_path, "recover", "delay-wake", "--preview", "--json", "--min-age", "2h")
    assert preview["count"] == 1
    assert [(s["action"], s["jobId"]) for s in preview["samples"]] == [("retry", ids["old_wake"])]
    everything = cli(tmp_path, "recover", "delay-wake", "--preview")
    assert "a run would touch 2 (2 retry)" in everything

    run = cli(tmp_path, "recover", "delay-wake", "--json", "--limit", "10", "--actor", "olivia")
    assert run["totals"] == {"total": 2, "done": 2, "skipped": 0, "failed": 0}
    statuses, audit = asyncio.run(_rows(tmp_path))
    assert statuses[ids["old_wake"]] == statuses[ids["new_wake"]] == "pending"
    assert statuses[ids["hook"]] == "dead"  # another action's type
    assert audit == ["recovery.run"]

    shown = cli(tmp_path, "recover", "webhook-delivery")
    assert "1 items: 1 done, 0 skipped, 0 failed" in shown

    unknown = cli(tmp_path, "recover", "everything", code=2)
    assert unknown == ""
    bad_age = cli(tmp_path, "recover", "delay-wake", "--min-age", "soon", "--json", code=2)
    assert bad_age["field"] == "minAge"
