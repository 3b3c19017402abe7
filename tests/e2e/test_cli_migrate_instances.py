"""``flowledger migrate-instances`` as a user runs it (issue 30): a
subprocess on a SQLite file — ``--dry-run`` prints the table of verdicts
and writes nothing, ``--dry-run --json`` gives the per-instance documents,
the run migrates what is not blocked, writes the audit rows and prints the
outcomes; a mapping to an unknown node is exit code 2 naming the field."""

from __future__ import annotations

import asyncio
from pathlib import Path

from sqlalchemy import select

from flowledger.clock import SystemClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit, workflow_instances
from flowledger.engine import Engine
from tests.e2e.test_cli_jobs import cli
from tests.integration import migration_support as ms


def _seed(tmp_path: Path) -> list[int]:
    cli(tmp_path, "migrate")

    async def main() -> list[int]:
        db = Database(f"sqlite:///{tmp_path / 'jobs.db'}")
        try:
            engine = Engine(db, SystemClock())
            await engine.deploy(ms.branches_v1(), actor="dev")
            await engine.deploy(ms.branches_v2(), actor="dev")
            running = await engine.start("mig", form={}, initiator="ira", version=1)
            paused = await engine.start("mig", form={}, initiator="ira", version=1)
            await engine.suspend(paused, actor="ops", reason="hold")
            return [running, paused]
        finally:
            await db.dispose()

    return asyncio.run(main())


async def _state(tmp_path: Path) -> tuple[dict[int, int], list[str]]:
    db = Database(f"sqlite:///{tmp_path / 'jobs.db'}")
    try:
        async with db.read() as conn:
            i = workflow_instances.c
            versions = dict((await conn.execute(select(i.id, i.definition_version))).all())
            audit = list((await conn.execute(select(operation_audit.c.action))).scalars())
        return versions, audit
    finally:
        await db.dispose()


def test_dry_run_then_run(tmp_path: Path) -> None:
    running, paused = _seed(tmp_path)
    base = ["migrate-instances", "--definition", "mig", "--from-version", "1", "--to-version", "2"]
    base += ["--map", "a=a2", "--reason", "new check after the wait"]
    table = cli(tmp_path, *base, "--dry-run")
    assert "changed" in table and "instance_suspended" in table
    assert "2 instances: 0 ok, 1 changed, 1 blocked" in table
    doc = cli(tmp_path, *base, "--dry-run", "--json")
    assert [(r["instanceId"], r["verdict"]) for r in doc["instances"]] == [
        (running, "changed"),
        (paused, "blocked"),
    ]
    assert asyncio.run(_state(tmp_path)) == ({running: 1, paused: 1}, [])

    done = cli(tmp_path, *base, "--json", "--actor", "olivia")
    assert done["progress"]["byOutcome"] == {"blocked": 1, "migrated": 1}
    for item in done["items"]:
        assert item["result"] == next(
            r for r in doc["instances"] if r["instanceId"] == item["instanceId"]
        )
    versions, audit = asyncio.run(_state(tmp_path))
    assert versions == {running: 2, paused: 1}
    assert sorted(audit) == ["instance.migrate", "migration.run"]

    wrong = cli(
        tmp_path, *base[:-2], "--map", "a=nowhere", "--reason", "x", "--dry-run", "--json", code=2
    )
    assert (wrong["code"], wrong["field"]) == ("migration_invalid", "mapping.a")
