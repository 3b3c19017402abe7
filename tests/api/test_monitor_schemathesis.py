"""Property-based testing of the instance monitoring operations (SPEC A-4,
O-1, O-2, O-3, O-5): the list, counts, export, form correction, remind and
saved views, called by schemathesis with generated valid and invalid
inputs as an admin, never answer 5xx. SQLite, a seeded world (a running
instance with a pending task, a saved view) so generated ids sometimes hit
real objects; derandomized and bounded like ``test_schemathesis.py``."""

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
from flowledger.ops.monitor.saved_views import create_view
from tests.api.conftest import approval
from tests.api.fuzzing import check_operation
from tests.runtime_support import default_engine

OPERATIONS = {
    ("GET", "/api/workflows/instances"),
    ("GET", "/api/workflows/instances/counts"),
    ("GET", "/api/workflows/instances/export"),
    ("PATCH", "/api/workflows/instances/{instanceId}/form"),
    ("POST", "/api/workflows/tasks/{taskId}/remind"),
    ("GET", "/api/workflows/views"),
    ("POST", "/api/workflows/views"),
    ("GET", "/api/workflows/views/{viewId}"),
    ("PATCH", "/api/workflows/views/{viewId}"),
    ("DELETE", "/api/workflows/views/{viewId}"),
}


async def _seed(db: Database, engine: Engine) -> str:
    async with db.engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    now = engine.clock.now()
    async with db.begin() as conn:
        await create_user(conn, "root", permissions=ALL_PERMISSIONS, tenants=["*"], now=now)
        token = await issue_token(conn, "root", now=now)
    await engine.deploy(approval(), actor="root")
    await engine.start("leave", form={"days": 1, "note": "=cmd"}, initiator="root")
    await create_view(
        db,
        tenant="default",
        owner="root",
        scope="instances",
        name="v",
        filters={},
        shared=False,
        is_default=True,
        now=now,
    )
    await db.dispose()
    return token


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, str]]:
    path: Path = tmp_path_factory.mktemp("monitor-schemathesis") / "api.db"
    db = Database(f"sqlite:///{path}")
    engine = default_engine(db, ManualClock())
    token = asyncio.run(_seed(db, engine))
    yield create_app(db, engine=engine), token
    asyncio.run(db.dispose())


def test_no_server_errors_in_monitoring_operations(
    seeded: tuple[object, str], subtests: pytest.Subtests
) -> None:
    app, token = seeded
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)
    operations = [
        op
        for op in (result.ok() for result in schema.get_all_operations())
        if (op.method.upper(), op.path) in OPERATIONS
    ]
    assert {(op.method.upper(), op.path) for op in operations} == OPERATIONS
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            with subtests.test(msg=f"{operation.label} {mode.value}"):
                check_operation(operation, mode, token)
