"""Property-based checks of the compensation routes (SPEC A-4): every
operation under /compensation, called by an admin with generated valid and
invalid inputs (JSON and multipart notes included), never answers 5xx.
SQLite only, like tests/api/test_schemathesis.py, with a seeded ticket so
generated ids sometimes hit a real one."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
import schemathesis
from schemathesis.generation.modes import GenerationMode

from flowledger.api import create_app
from flowledger.api.auth import create_user, issue_token
from flowledger.api.permissions import ALL_PERMISSIONS
from flowledger.clock import ManualClock
from flowledger.compensation.tickets import open_ticket
from flowledger.db.database import Database
from flowledger.db.schema import metadata
from flowledger.engine import Engine
from tests.api.conftest import approval
from tests.api.fuzzing import check_operation
from tests.runtime_support import default_engine


async def _seed(db: Database, engine: Engine) -> str:
    async with db.engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    now = engine.clock.now()
    async with db.begin() as conn:
        await create_user(conn, "root", permissions=ALL_PERMISSIONS, tenants=["*"], now=now)
        token = await issue_token(conn, "root", now=now)
    await engine.deploy(approval(), actor="root")
    iid = await engine.start("leave", form={"days": 1}, initiator="root")
    async with db.begin() as conn:
        for status in ("pending", "resolved"):
            await open_ticket(
                conn,
                tenant_id="default",
                instance_id=iid,
                failed_node_key="manager",
                node_key="manager",
                kind="notify",
                status=status,
                error="boom",
                action={"type": "email", "recipients": ["ops@example.com"]},
                repair_task_id=None,
                idempotency_key=None,
                actor="system",
                now=now,
            )
    await db.dispose()  # the app opens its own connections on schemathesis' loop
    return token


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, str]]:
    path: Path = tmp_path_factory.mktemp("compensation-fuzz") / "api.db"
    db = Database(f"sqlite:///{path}")
    engine = default_engine(db, ManualClock())
    token = asyncio.run(_seed(db, engine))
    yield create_app(db, engine=engine), token
    asyncio.run(db.dispose())


def test_compensation_routes_never_answer_5xx_A4(
    seeded: tuple[object, str], subtests: pytest.Subtests
) -> None:
    app, token = seeded
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)
    operations = [
        op
        for op in (result.ok() for result in schema.get_all_operations())
        if "/compensation" in op.path
    ]
    assert {op.path.rsplit("/compensation", 1)[1] for op in operations} == {
        "/list",
        "/{ticketId}",
        "/{ticketId}/attachments/{logId}",
        "/{ticketId}/resume",
        "/{ticketId}/retry",
        "/{ticketId}/note",
        "/{ticketId}/resolve",
    }
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            with subtests.test(msg=f"{operation.label} {mode.value}"):
                check_operation(operation, mode, token)
