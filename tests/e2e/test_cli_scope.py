"""``flowledger pause-jobs`` / ``resume-jobs`` / ``paused-jobs`` and
``flowledger instances suspend-all`` / ``resume-all`` as a user runs them
(issue 31 item 3): subprocesses on a SQLite file (the storage underneath is
tested on both backends in tests/api/test_scope_suspend_api.py and
tests/ledger_conformance/test_driver_pauses.py), checking the ``--json``
documents, the exit codes (2 naming the field for a missing reason or an
unknown pool) and the audit rows."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from sqlalchemy import select

from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit
from flowledger.states import Pool
from tests.e2e.test_cli_jobs import cli

POOL = Pool.OUTBOUND.value
FLOW = {
    "key": "cli_scope",
    "name": "cli scope",
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "desk", "type": "handle", "assignees": {"users": ["hal"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [{"from": "start", "to": "desk"}, {"from": "desk", "to": "end"}],
}


def _audit(tmp_path: Path) -> list[dict[str, Any]]:
    async def main() -> list[dict[str, Any]]:
        db = Database(f"sqlite:///{tmp_path / 'jobs.db'}")
        try:
            async with db.read() as conn:
                rows = await conn.execute(select(operation_audit).order_by(operation_audit.c.id))
                return [dict(r) for r in rows.mappings()]
        finally:
            await db.dispose()

    return asyncio.run(main())


def test_pause_and_resume_a_pool_from_the_cli(tmp_path: Path) -> None:
    cli(tmp_path, "migrate")
    paused = cli(tmp_path, "pause-jobs", "--pool", POOL, "--reason", "vendor down", "--json")
    assert (paused["scope"], paused["value"], paused["pausedBy"], paused["reason"]) == (
        "pool",
        POOL,
        "cli",
        "vendor down",
    )
    listed = cli(tmp_path, "paused-jobs", "--json")["items"]
    assert [(p["scope"], p["value"]) for p in listed] == [("pool", POOL)]
    no_reason = cli(tmp_path, "pause-jobs", "--pool", "workflow-ledger", "--json", code=2)
    assert no_reason["field"] == "reason"
    unknown = cli(tmp_path, "pause-jobs", "--pool", "nope", "--reason", "r", "--json", code=2)
    assert (unknown["code"], unknown["field"]) == ("unknown_pool", "pool")
    resumed = cli(tmp_path, "resume-jobs", "--pool", POOL, "--json")
    assert resumed["reason"] == "vendor down"
    assert cli(tmp_path, "paused-jobs", "--json")["items"] == []
    rows = [r for r in _audit(tmp_path) if r["action"].startswith("job_scope.")]
    assert [(r["action"], r["target_id"], r["result"]) for r in rows] == [
        ("job_scope.pause", POOL, "ok"),
        ("job_scope.pause", "nope", "failed"),
        ("job_scope.resume", POOL, "ok"),
    ]


def test_suspend_and_resume_a_definition_from_the_cli(tmp_path: Path) -> None:
    cli(tmp_path, "migrate")
    source = tmp_path / "flow.json"
    source.write_text(json.dumps(FLOW))
    cli(tmp_path, "definitions", "deploy", str(source))
    ids = [int(cli(tmp_path, "instances", "start", "cli_scope").strip()) for _ in range(2)]
    dry = cli(tmp_path, "instances", "suspend-all", "cli_scope", "--dry-run", "--json")
    assert (dry["count"], dry["sample"]) == (2, ids)
    assert (dry["rate"], dry["estimatedCompletion"]) == (None, None)
    # --rate: the dry run says how long a run at it takes (2 at 4 per second: 0.5 s)
    paced = cli(tmp_path, "instances", "suspend-all", "cli_scope", "--dry-run", "--rate", "4")
    assert "at 4 per second a run takes about 0.5 s" in paced
    cli(tmp_path, "instances", "suspend-all", "cli_scope", "--rate", "0", code=2)
    refused = cli(tmp_path, "instances", "suspend-all", "cli_scope", "--json", code=2)
    assert refused["field"] == "reason"
    run = cli(
        tmp_path,
        "instances",
        "suspend-all",
        "cli_scope",
        "--node",
        "desk",
        "--reason",
        "audit",
        "--rate",
        "20",
        "--json",
    )
    assert run["totals"]["suspended"] == 2 and run["totals"]["selected"] == 2
    assert run["rate"] == 20
    again = cli(tmp_path, "instances", "suspend-all", "cli_scope", "--dry-run", "--json")
    assert (again["count"], again["skippedByStatus"]) == (0, {"suspended": 2})
    resumed = cli(tmp_path, "instances", "resume-all", "cli_scope", "--json")
    assert resumed["totals"]["resumed"] == 2
    actions = [r["action"] for r in _audit(tmp_path)]
    assert actions.count("definition.suspend_all") == 1
    assert actions.count("instance.suspend") == 2 and actions.count("instance.resume") == 2
