"""The embedding example (``examples/embed_worker.py``, docs/embedding.md)
runs for real, on SQLite and PostgreSQL (issue 15 item 5): on an empty
database it migrates, enqueues five jobs into its user pool ``emails`` and
runs a worker until they are done; the database then shows all five
succeeded in that pool, each with one attempt."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sqlalchemy import select

from flowledger.db.database import Database
from flowledger.db.schema import workflow_jobs as jobs

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "embed_worker.py"


def _run_example(database_url: str, folder: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWLEDGER_")}
    env["FLOWLEDGER_SECRET_KEY"] = os.environ["FLOWLEDGER_SECRET_KEY"]
    return subprocess.run(
        [sys.executable, str(EXAMPLE), database_url],
        env=env,
        cwd=folder,
        capture_output=True,
        text=True,
        timeout=120,
    )


async def test_the_embedding_example_runs_its_jobs(empty_db_url: str, tmp_path: Path) -> None:
    result = _run_example(empty_db_url, tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert lines[-1] == "5 jobs succeeded", result.stdout
    assert sum("(pool emails)" in line for line in lines) == 5
    db = Database(empty_db_url)
    try:
        async with db.read() as conn:
            rows = (
                await conn.execute(
                    select(jobs.c.type, jobs.c.pool, jobs.c.status, jobs.c.attempts, jobs.c.result)
                )
            ).all()
    finally:
        await db.dispose()
    assert len(rows) == 5
    assert {(r.type, r.pool, r.status, r.attempts) for r in rows} == {
        ("send_welcome_email", "emails", "succeeded", 1)
    }
    assert sorted(r.result["sent_to"] for r in rows) == [f"user{i}@example.com" for i in range(5)]
