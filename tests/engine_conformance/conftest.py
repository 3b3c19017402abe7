"""Fixtures of the engine conformance suite (issue 28 item 6).

``sides`` gives a test both backends at once: a fresh SQLite database and a
fresh PostgreSQL database, each a copy of the session's schema template
(``schema_templates`` of tests/conftest.py, cloned by tests/dbutil.py), each
with its own ManualClock starting at the same instant and an engine as the
default runtime builds it (failure policies on). A test runs one scenario
on each in turn and compares the rows (tests/engine_conformance/support.py).

Both sides share one real HTTP receiver on 127.0.0.1 (tests/outbound): the
process settings allow-list exactly its port, and name the tenant
administrators a failure policy's repair task goes to (SPEC C-3). The API
client a side offers (for steps that only the API audits, such as a force
jump's ``operation_audit`` row) is ``create_app`` over that side's database
and engine, built once per process as tests/api does, authenticated as an
operator with a real bearer token."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import ExitStack
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from flowledger.access.permissions import ENGINE_OPERATE, INSTANCE_MONITOR
from flowledger.access.tokens import create_user, issue_token
from flowledger.api import create_app
from flowledger.api.deps import ApiContext
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.ledger.types import JobTypeRegistry
from tests.dbutil import database_url
from tests.engine_conformance.support import BACKENDS, Side
from tests.outbound.receivers import Receiver
from tests.runtime_support import default_engine

ADMINS = "default:alice|bob"
OPERATOR = "ops"

_apps: list[tuple[FastAPI, JobTypeRegistry]] = []  # one app per process (see tests/api)


async def _api_for(side: Side) -> httpx.AsyncClient:
    if not _apps:
        app = create_app(side.db, engine=side.engine)
        _apps.append((app, app.state.api.job_types))
    app, job_types = _apps[0]
    app.state.api = ApiContext(db=side.db, engine=side.engine, job_types=job_types)
    async with side.db.begin() as conn:
        await create_user(
            conn,
            OPERATOR,
            permissions=[ENGINE_OPERATE, INSTANCE_MONITOR],
            now=side.clock.now(),
        )
        token = await issue_token(conn, OPERATOR, now=side.clock.now())
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app),
        base_url="http://testserver",
        headers={"Authorization": f"Bearer {token}"},
    )


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    server = Receiver()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


@pytest.fixture
async def sides(
    tmp_path: Path,
    schema_templates: dict[str, str],
    receiver: Receiver,
    monkeypatch: pytest.MonkeyPatch,
) -> AsyncIterator[list[Side]]:
    """[SQLite side, PostgreSQL side], each on a fresh database."""
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_ALLOW", receiver.endpoint)
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_READ_TIMEOUT_S", "2")
    monkeypatch.setenv("FLOWLEDGER_OUTBOUND_CONNECT_TIMEOUT_S", "2")
    monkeypatch.setenv("FLOWLEDGER_ADMIN_USERS", ADMINS)
    with ExitStack() as stack:
        made: list[Side] = []
        try:
            for backend in BACKENDS:
                url = stack.enter_context(
                    database_url(backend, tmp_path, schema_templates[backend])
                )
                db = Database(url)
                clock = ManualClock()
                made.append(
                    Side(
                        backend=backend,
                        db=db,
                        clock=clock,
                        engine=default_engine(db, clock),
                        receiver=receiver,
                        api_factory=_api_for,
                    )
                )
            yield made
        finally:
            for side in made:
                await side.aclose()
