"""Property-based checks of the alerting routes (SPEC A-4, O-22): every
operation under /engine/alerts, called by an admin with generated valid and
invalid inputs, never answers 5xx. SQLite only, like
tests/api/test_schemathesis.py, with a seeded rule, event and silence so
generated ids sometimes hit real ones."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pytest
import schemathesis
from schemathesis.generation.modes import GenerationMode

from flowledger.api import create_app
from flowledger.api.auth import create_user, issue_token
from flowledger.api.permissions import ALL_PERMISSIONS
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.schema import metadata
from flowledger.ops.alerts.evaluator import evaluate_once
from flowledger.ops.alerts.rules import RuleFields, create_rule
from flowledger.ops.alerts.silences import create_silence
from tests.api.fuzzing import check_operation
from tests.ledger_access import ledger_of
from tests.ops.rows import add_job
from tests.runtime_support import default_engine


async def _seed(db: Database, clock: ManualClock) -> str:
    async with db.engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    now = clock.now()
    async with db.begin() as conn:
        await create_user(conn, "root", permissions=ALL_PERMISSIONS, tenants=["*"], now=now)
        token = await issue_token(conn, "root", now=now)
        fields = RuleFields("dead", "dead_letters", "gt", 0, 0, email_to=["a@example.com"])
        await create_rule(conn, tenant="default", fields=fields, actor="root", now=now)
        await create_silence(
            conn,
            tenant="default",
            rule_id=None,
            metric=None,
            starts_at=now,
            ends_at=now + timedelta(hours=1),
            comment="seed",
            actor="root",
            now=now,
        )
    await add_job(db, now, status="dead")
    await evaluate_once(db, clock, ledger=ledger_of(db))
    await db.dispose()  # the app opens its own connections on schemathesis' loop
    return token


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, str]]:
    path: Path = tmp_path_factory.mktemp("alerts-fuzz") / "api.db"
    db = Database(f"sqlite:///{path}")
    clock = ManualClock()
    token = asyncio.run(_seed(db, clock))
    yield create_app(db, engine=default_engine(db, clock)), token
    asyncio.run(db.dispose())


def test_alert_routes_never_answer_5xx_A4(
    seeded: tuple[object, str], subtests: pytest.Subtests
) -> None:
    app, token = seeded
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)
    operations = [
        op
        for op in (result.ok() for result in schema.get_all_operations())
        if "/engine/alerts" in op.path
    ]
    assert len(operations) == 11
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            with subtests.test(msg=f"{operation.label} {mode.value}"):
                check_operation(operation, mode, token)
