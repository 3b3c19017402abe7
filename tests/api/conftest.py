"""API test fixtures (SPEC A-1..A-4): an ``httpx.AsyncClient`` over
``ASGITransport`` on ``create_app(db)`` (every test runs on SQLite and
PostgreSQL through the ``db`` fixture), an engine on the test's ManualClock,
and :class:`Api` — helpers to create users with tokens, deploy the small
definitions below and start instances, all through the API."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Sequence
from typing import Any

import httpx
import pytest
from fastapi import FastAPI
from sqlalchemy import Table, func, select

from flowledger.api import create_app
from flowledger.api.auth import create_user, issue_token
from flowledger.api.deps import ApiContext
from flowledger.api.permissions import (
    ALL_PERMISSIONS,
    DEFINITION_MANAGE,
    ENGINE_OPERATE,
    INSTANCE_MONITOR,
    INSTANCE_START,
    TASK_ACT,
)
from flowledger.clock import ManualClock
from flowledger.db.database import Database
from flowledger.db.engine_schema import users
from flowledger.engine import Engine
from flowledger.ledger.types import JobTypeRegistry
from tests.runtime_support import default_engine

BASE = "/api/workflows"
Headers = dict[str, str]

# --------------------------------------------------------------- definitions


def approval(key: str = "leave", assignees: Sequence[str] = ("mia",), mode: str = "any") -> dict:
    """start -> manager (approval) -> end, with a small form."""
    return {
        "key": key,
        "name": f"{key} request",
        "form": {
            "fields": [
                {"key": "days", "type": "integer", "required": True},
                {"key": "note", "type": "string"},
            ]
        },
        "nodes": [
            {"key": "start", "type": "start"},
            {
                "key": "manager",
                "type": "approval",
                "mode": mode,
                "assignees": {"users": list(assignees)},
            },
            {"key": "end", "type": "end"},
        ],
        "edges": [{"from": "start", "to": "manager"}, {"from": "manager", "to": "end"}],
    }


def handling(key: str = "errand") -> dict:
    """start -> desk (handle task for hal) -> end."""
    return {
        "key": key,
        "name": "Errand",
        "nodes": [
            {"key": "start", "type": "start"},
            {"key": "desk", "type": "handle", "assignees": {"users": ["hal"]}},
            {"key": "end", "type": "end"},
        ],
        "edges": [{"from": "start", "to": "desk"}, {"from": "desk", "to": "end"}],
    }


# ------------------------------------------------------------------- helpers


class Api:
    """The test's view of the API: a client plus user/token and flow helpers."""

    def __init__(self, client: httpx.AsyncClient, db: Database, clock: ManualClock) -> None:
        self.client = client
        self.db = db
        self.clock = clock
        self._ids = itertools.count(1)

    async def token(
        self,
        user_id: str,
        *permissions: str,
        tenants: Sequence[str] = ("default",),
        roles: Sequence[str] = (),
    ) -> Headers:
        """Create ``user_id`` (if new) with ``permissions`` and return auth headers."""
        async with self.db.begin() as conn:
            exists = (
                await conn.execute(
                    select(func.count()).select_from(users).where(users.c.id == user_id)
                )
            ).scalar_one()
            if not exists:
                await create_user(
                    conn,
                    user_id,
                    roles=roles,
                    permissions=permissions,
                    tenants=tenants,
                    now=self.clock.now(),
                )
            token = await issue_token(conn, user_id, now=self.clock.now())
        return {"Authorization": f"Bearer {token}"}

    async def admin(self, user_id: str = "root", tenants: Sequence[str] = ("*",)) -> Headers:
        return await self.token(user_id, *ALL_PERMISSIONS, tenants=tenants)

    async def deploy(self, headers: Headers, definition: dict, **extra: Any) -> dict:
        response = await self.client.post(
            f"{BASE}/definitions", json={"definition": definition, **extra}, headers=headers
        )
        assert response.status_code == 201, response.text
        return dict(response.json())

    async def start(self, headers: Headers, key: str = "leave", **body: Any) -> dict:
        body.setdefault("form", {"days": 2})
        response = await self.client.post(
            f"{BASE}/instances", json={"definitionKey": key, **body}, headers=headers
        )
        assert response.status_code == 201, response.text
        return dict(response.json())

    async def get(self, path: str, headers: Headers, **params: Any) -> httpx.Response:
        return await self.client.get(f"{BASE}{path}", headers=headers, params=params)

    async def post(self, path: str, headers: Headers, body: Any = None) -> httpx.Response:
        return await self.client.post(f"{BASE}{path}", headers=headers, json=body or {})

    async def my_tasks(self, headers: Headers, **params: Any) -> list[dict]:
        response = await self.get("/tasks", headers, **params)
        assert response.status_code == 200, response.text
        return list(response.json()["items"])

    async def rows(self, table: Table) -> list[dict]:
        async with self.db.read() as conn:
            result = await conn.execute(select(table).order_by(*table.primary_key.columns))
            return [dict(r) for r in result.mappings().all()]

    async def count(self, table: Table) -> int:
        async with self.db.read() as conn:
            return int((await conn.execute(select(func.count()).select_from(table))).scalar_one())


class People:
    """The cast of most tests, each with a token in tenant ``default``:
    ann starts (start + act), mia approves (act), ops operates (operate +
    monitor), root is admin (all permissions, every tenant)."""

    def __init__(self, headers: dict[str, Headers]) -> None:
        self.headers = headers

    def __getattr__(self, name: str) -> Headers:
        try:
            return self.headers[name]
        except KeyError:
            raise AttributeError(name) from None


# ------------------------------------------------------------------ fixtures


@pytest.fixture
def engine(db: Database, clock: ManualClock) -> Engine:
    return default_engine(db, clock)


_apps: list[FastAPI] = []
_job_types: list[JobTypeRegistry] = []  # the first app's: its runtime's handlers' types


@pytest.fixture
def app(db: Database, engine: Engine) -> FastAPI:
    """``create_app`` over the test's database and engine. Building the
    routes costs ~0.5 s (FastAPI makes a field adapter for every parameter of
    every route), so one app per process is built and each test gets it with
    its own context — the same ``ApiContext`` ``create_app(db, engine=…)``
    installs. A test that changes the app itself builds its own."""
    if not _apps:
        _apps.append(create_app(db, engine=engine))
        _job_types.append(_apps[0].state.api.job_types)
    app = _apps[0]
    app.state.api = ApiContext(db=db, engine=engine, job_types=_job_types[0])
    return app


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[httpx.AsyncClient]:
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as c:
        yield c


@pytest.fixture
def api(client: httpx.AsyncClient, db: Database, clock: ManualClock) -> Api:
    return Api(client, db, clock)


@pytest.fixture
async def people(api: Api) -> People:
    return People(
        {
            "root": await api.admin(),
            "ann": await api.token("ann", INSTANCE_START, TASK_ACT),
            "mia": await api.token("mia", TASK_ACT),
            "max": await api.token("max", TASK_ACT),
            "hal": await api.token("hal", TASK_ACT),
            "ops": await api.token("ops", ENGINE_OPERATE, INSTANCE_MONITOR),
            "mon": await api.token("mon", INSTANCE_MONITOR),
            "dev": await api.token("dev", DEFINITION_MANAGE),
        }
    )
