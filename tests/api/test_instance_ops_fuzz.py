"""Property-based checks of the instance diagnostics and operations (SPEC
A-4, O-4, O-6, O-7, O-10): every new operation, called by an admin with
generated valid and invalid inputs, never answers 5xx. SQLite only, like
tests/api/test_schemathesis.py, with a running instance (id 1) so generated
ids sometimes hit a real one."""

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
from flowledger.db.database import Database
from flowledger.db.schema import metadata
from flowledger.engine import Engine
from tests.api.conftest import approval
from tests.api.fuzzing import check_operation
from tests.runtime_support import default_engine

PATHS = {
    "/instances/batch-recover",
    "/instances/{instanceId}/diagnostics",
    "/instances/{instanceId}/force-jump/preview",
    "/instances/{instanceId}/force-jump",
    "/instances/{instanceId}/diagnostic-bundle",
}


async def _seed(db: Database, engine: Engine) -> str:
    async with db.engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    now = engine.clock.now()
    async with db.begin() as conn:
        await create_user(conn, "root", permissions=ALL_PERMISSIONS, tenants=["*"], now=now)
        token = await issue_token(conn, "root", now=now)
    await engine.deploy(approval(), actor="root")
    for _ in range(3):
        await engine.start("leave", form={"days": 1}, initiator="root")
    await db.dispose()  # the app opens its own connections on schemathesis' loop
    return token


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, str]]:
    path: Path = tmp_path_factory.mktemp("instance-ops-fuzz") / "api.db"
    db = Database(f"sqlite:///{path}")
    engine = default_engine(db, ManualClock())
    token = asyncio.run(_seed(db, engine))
    yield create_app(db, engine=engine), token
    asyncio.run(db.dispose())


def test_instance_ops_never_answer_5xx_A4(
    seeded: tuple[object, str], subtests: pytest.Subtests
) -> None:
    app, token = seeded
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)
    operations = [
        op
        for op in (result.ok() for result in schema.get_all_operations())
        if op.path.removeprefix("/api/workflows") in PATHS
    ]
    assert {op.path.removeprefix("/api/workflows") for op in operations} == PATHS
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            with subtests.test(msg=f"{operation.label} {mode.value}"):
                check_operation(operation, mode, token)
