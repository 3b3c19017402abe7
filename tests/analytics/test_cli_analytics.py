"""``flowledger analytics`` and ``flowledger retention …`` as a user runs
them (SPEC O-14, O-20): on the demo database the JSON figures equal the
database's own counts, the tables print, and ``retention run`` removes what
``retention preview`` counted and is audited like the API."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path


def _cli(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "FLOWLEDGER_DATABASE_URL": f"sqlite:///{tmp_path / 'cli.db'}"}
    return subprocess.run(
        [sys.executable, "-m", "flowledger", *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=180,
        cwd=tmp_path,
    )


def test_analytics_and_retention_commands_O14_O20(tmp_path: Path) -> None:
    assert _cli(tmp_path, "demo").returncode == 0
    db = sqlite3.connect(tmp_path / "cli.db")
    (instances,) = db.execute("SELECT count(*) FROM workflow_instances").fetchone()
    (pending,) = db.execute(
        "SELECT count(*) FROM workflow_tasks WHERE status = 'pending' "
        "AND kind IN ('approval', 'handle', 'catch', 'resubmit')"
    ).fetchone()
    stale = (datetime.now(UTC) - timedelta(days=8)).replace(tzinfo=None).isoformat(sep=" ")
    db.execute(
        "INSERT INTO system_scheduler_nodes (id, hostname, pid, roles, pools, slots_capacity,"
        " slots_in_use, status, started_at, heartbeat_at)"
        " VALUES ('gone', 'h', 1, '[]', '{}', 0, 0, 'stopped', ?, ?)",
        (stale, stale),
    )
    db.commit()

    result = _cli(tmp_path, "analytics", "--json")
    assert result.returncode == 0, result.stderr
    panels = json.loads(result.stdout)
    assert set(panels) == {
        "totals",
        "daily",
        "top-definitions",
        "node-bottlenecks",
        "approver-workload",
        "timeouts",
        "async-health",
    }
    assert panels["totals"]["instances"] == instances
    assert panels["totals"]["pendingTasks"] == pending
    assert len(panels["daily"]["days"]) == 14
    assert sum(d["starts"] for d in panels["daily"]["days"]) == instances

    table = _cli(tmp_path, "analytics", "--panel", "top-definitions")
    assert table.returncode == 0 and "definitionKey" in table.stdout
    bad = _cli(tmp_path, "analytics", "--panel", "nope")
    assert bad.returncode != 0

    preview = json.loads(_cli(tmp_path, "retention", "preview", "--json").stdout)
    nodes = next(i for i in preview["items"] if i["policy"] == "system_scheduler_nodes")
    assert nodes["rows"] == 1
    run = _cli(tmp_path, "retention", "run", "--json", "--actor", "nightly-ops")
    assert run.returncode == 0, run.stderr
    recorded = json.loads(run.stdout)
    assert recorded["rowsRemoved"] == preview["rows"]
    assert recorded["actor"] == "nightly-ops"
    assert db.execute(
        "SELECT count(*) FROM system_scheduler_nodes WHERE id = 'gone'"
    ).fetchone() == (0,)
    audit = db.execute(
        "SELECT action, actor, result FROM operation_audit WHERE action = 'retention.run'"
    ).fetchall()
    assert audit == [("retention.run", "nightly-ops", "ok")]
    db.close()
