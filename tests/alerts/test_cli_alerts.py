"""``flowledger alerts rules|events|silence`` as a user runs it (SPEC O-22):
subprocesses on a migrated SQLite file, checking the ``--json`` documents,
the exit code of a refused command and the audit rows of the silences."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

from sqlalchemy import select

from flowledger.clock import SystemClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit
from flowledger.ops.alerts.evaluator import evaluate_once
from flowledger.ops.alerts.rules import RuleFields, create_rule
from tests.cli_support import run_cli
from tests.ledger_access import ledger_of
from tests.ops.rows import add_job


def cli(tmp_path: Path, *args: str, code: int = 0) -> Any:
    out = run_cli(tmp_path, "alerts.db", *args, code=code).stdout
    return json.loads(out) if "--json" in args else out


def seed(tmp_path: Path) -> int:
    """A firing rule (one dead job, ``for`` 0) after migrating."""
    cli(tmp_path, "migrate")

    async def main() -> int:
        db = Database(f"sqlite:///{tmp_path / 'alerts.db'}")
        clock = SystemClock()
        try:
            async with db.begin() as conn:
                row, _ = await create_rule(
                    conn,
                    tenant="acme",
                    fields=RuleFields("dead letters", "dead_letters", "gt", 0, 0),
                    actor="test",
                    now=clock.now(),
                )
            await add_job(db, clock.now(), tenant_id="acme", status="dead")
            await evaluate_once(db, clock, ledger=ledger_of(db))
            return int(row["id"])
        finally:
            await db.dispose()

    return asyncio.run(main())


def test_alerts_rules_events_and_silence_from_the_cli_O22(tmp_path: Path) -> None:
    rule_id = seed(tmp_path)
    (rule,) = cli(tmp_path, "alerts", "rules", "--json")["items"]
    assert (rule["id"], rule["state"], rule["lastValue"], rule["for"]) == (
        rule_id,
        "firing",
        1.0,
        "0s",
    )
    assert "dead letters" in cli(tmp_path, "alerts", "rules")
    (event,) = cli(tmp_path, "alerts", "events", "--json")["items"]
    assert (event["ruleId"], event["kind"], event["value"]) == (rule_id, "firing", 1.0)

    created = cli(
        tmp_path,
        "alerts",
        "silence",
        "--rule",
        str(rule_id),
        "--duration",
        "2h",
        "--comment",
        "deploying",
        "--actor",
        "ann",
        "--json",
    )
    assert created["matcher"] == {"ruleId": rule_id, "metric": None, "tenant": "acme"}
    assert (created["state"], created["createdBy"]) == ("active", "ann")
    listed = cli(tmp_path, "alerts", "silence", "--list", "--json")["items"]
    assert [s["id"] for s in listed] == [created["id"]]
    expired = cli(tmp_path, "alerts", "silence", "--expire", str(created["id"]), "--json")
    assert expired["state"] == "expired"
    refused = cli(
        tmp_path, "alerts", "silence", "--metric", "cpu", "--comment", "x", "--json", code=2
    )
    assert (refused["code"], refused["field"]) == ("alert_silence_invalid", "matcher.metric")

    async def audit() -> list[tuple[str, str, str]]:
        db = Database(f"sqlite:///{tmp_path / 'alerts.db'}")
        try:
            async with db.read() as conn:
                rows = await conn.execute(
                    select(
                        operation_audit.c.action, operation_audit.c.result, operation_audit.c.actor
                    ).order_by(operation_audit.c.id)
                )
                return [tuple(r) for r in rows]  # type: ignore[misc]
        finally:
            await db.dispose()

    assert asyncio.run(audit()) == [
        ("alert_silence.create", "ok", "ann"),
        ("alert_silence.expire", "ok", "cli"),
        ("alert_silence.create", "failed", "cli"),
    ]
