"""``flowledger health`` as cron or a readiness probe runs it (SPEC O-16):
a subprocess on a SQLite file. Exit code 0 on a healthy engine, 1 when any
critical problem exists (a stalled instance, made by the engine at a
gateway that matches nothing), 2 on a bad threshold or rule; the rich table
and the ``--json`` document."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path

from flowledger.clock import SystemClock
from flowledger.db.database import Database
from tests.e2e.test_cli_jobs import _env
from tests.ops.health_support import approval_flow, dead_end_flow
from tests.runtime_support import default_engine


def cli(tmp_path: Path, *args: str, code: int) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "flowledger", *args],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == code, (args, done.stdout, done.stderr)
    return done.stdout if "--json" in args else done.stdout + done.stderr


def seed(tmp_path: Path, *, stalled: bool) -> int:
    async def main() -> int:
        db = Database(f"sqlite:///{tmp_path / 'jobs.db'}")
        try:
            engine = default_engine(db, SystemClock())
            await engine.deploy(approval_flow(), actor="a")
            await engine.deploy(dead_end_flow(), actor="a")
            await engine.start("leave", form={}, initiator="u")
            if stalled:
                return await engine.start("dead", form={"amount": 1}, initiator="u")
            return 0
        finally:
            await db.dispose()

    return asyncio.run(main())


def test_exit_codes_table_and_json_O16(tmp_path: Path) -> None:
    cli(tmp_path, "migrate", code=0)
    seed(tmp_path, stalled=False)
    healthy = cli(tmp_path, "health", code=0)  # a young human wait is fine
    assert "score 100/100" in healthy
    iid = seed(tmp_path, stalled=True)
    table = cli(tmp_path, "health", "--threshold", "1h", code=1)
    assert "instance_stalled" in table and "critical" in table
    only = cli(tmp_path, "health", "--rule", "waiting_task_stuck", "--json", code=0)
    assert json.loads(only)["items"] == []
    document = json.loads(cli(tmp_path, "health", "--json", code=1))
    (item,) = document["items"]
    assert (item["rule"], item["level"], item["instanceId"]) == (
        "instance_stalled",
        "critical",
        iid,
    )
    # the REST item's fields: the values the words are made of, the repair
    assert list(item["messageParams"]) == ["ageMinutes"] and item["recoveryAction"] is None
    assert item["messageParams"]["ageMinutes"] in (0, 1) and "now" in document
    assert document["summary"]["byLevel"] == {"critical": 1, "warning": 0}
    assert document["summary"]["score"] == 95
    assert "threshold" in cli(tmp_path, "health", "--threshold", "5m", code=2)
    assert "unknown rule" in cli(tmp_path, "health", "--rule", "nope", code=2)
