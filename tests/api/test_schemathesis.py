"""Property-based API testing with schemathesis (SPEC A-1, A-4): every
operation of /api/openapi.json, called with generated valid and invalid
inputs by an admin (all permissions, every tenant), never answers 5xx.

SQLite only (a sync test: schemathesis drives the ASGI app through its own
event-loop thread), with a small seeded world — a definition, a running
instance with a task, a schedule — so generated ids sometimes hit real
objects. Examples are limited and derandomized so the run is reproducible
and well under a minute."""

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


async def _seed(db: Database, engine: Engine) -> str:
    async with db.engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    now = engine.clock.now()
    async with db.begin() as conn:
        await create_user(conn, "root", permissions=ALL_PERMISSIONS, tenants=["*"], now=now)
        await create_user(conn, "mia", permissions=["workflow:task:act"], now=now)
        token = await issue_token(conn, "root", now=now)
    await engine.deploy(approval(), actor="root")
    await engine.start("leave", form={"days": 1}, initiator="root")
    await engine.create_schedule(
        definition_key="leave", cron="0 9 * * *", form={"days": 1}, initiator="root"
    )
    await db.dispose()  # the app opens its own connections on schemathesis' loop
    return token


@pytest.fixture(scope="module")
def seeded(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[object, str]]:
    path: Path = tmp_path_factory.mktemp("schemathesis") / "api.db"
    db = Database(f"sqlite:///{path}")
    engine = default_engine(db, ManualClock())
    token = asyncio.run(_seed(db, engine))
    with pytest.MonkeyPatch.context() as patch:
        # with a callback secret the signed callback routes check signatures
        # (401) instead of answering 503 for every generated request
        patch.setenv("FLOWLEDGER_CALLBACK_SECRET", "schemathesis-callback-secret")
        yield create_app(db, engine=engine), token
    asyncio.run(db.dispose())


def test_no_server_errors(seeded: tuple[object, str], subtests: pytest.Subtests) -> None:
    app, token = seeded
    schema = schemathesis.openapi.from_asgi("/api/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 20
    for operation in operations:
        for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE):
            with subtests.test(msg=f"{operation.label} {mode.value}"):
                check_operation(operation, mode, token)
