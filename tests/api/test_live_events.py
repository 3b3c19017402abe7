"""The live console's event stream (issue 33 item 2) on both backends,
through a real uvicorn on 127.0.0.1: a job a real worker settles reaches the
stream of a monitor of its tenant and not the stream of another tenant's
monitor; no token is 401 and no monitor permission 403; a server stopping
with an open stream stops at once (uvicorn does not wait on it)."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx
import pytest
import uvicorn

from flowledger.api import create_app
from flowledger.api.auth import Caller
from flowledger.api.permissions import INSTANCE_MONITOR, TASK_ACT
from flowledger.api.routers.live import visible
from flowledger.cli.serve import serve_api
from flowledger.db.changes import Change
from flowledger.db.database import Database
from flowledger.ledger.models import JobSpec
from flowledger.worker import JobContext
from tests.api.conftest import BASE, Api
from tests.ledger_access import enqueue_many
from tests.runtime_support import TEST_HANDLERS, job_types_for_tests, runtime_for


async def _live_noop(ctx: JobContext) -> dict[str, Any]:
    return {"ok": True}


LIVE_NOOP = TEST_HANDLERS.register("api_live_noop", _live_noop).job_type.name
# a delay already due on the engine's clock: its wake job runs at once
WAIT = {
    "key": "live_wait",
    "name": "Live wait",
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "wait", "type": "delay", "duration": "PT1S"},
        {"key": "end", "type": "end"},
    ],
    "edges": [{"from": "start", "to": "wait"}, {"from": "wait", "to": "end"}],
}


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@asynccontextmanager
async def served(app: Any) -> AsyncIterator[str]:
    """``app`` on a real uvicorn on a free port of 127.0.0.1."""
    port = _free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
    )
    task = asyncio.ensure_future(server.serve())
    while not server.started:
        assert not task.done(), "uvicorn did not start"
        await asyncio.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        app.state.api.db.changes.close()
        server.should_exit = True
        await asyncio.wait_for(task, 10)


class Stream:
    """The events read so far from one open stream (a background reader)."""

    def __init__(self, response: httpx.Response) -> None:
        self.response = response
        self.events: list[tuple[str, dict]] = []
        self.comments = 0
        self._arrived = asyncio.Event()
        self._task = asyncio.ensure_future(self._read())

    async def _read(self) -> None:
        name, data = "message", ""
        async for line in self.response.aiter_lines():
            if line.startswith(":"):
                self.comments += 1
            elif line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data += line[5:].strip()
            elif line == "" and data:
                self.events.append((name, json.loads(data)))
                name, data = "message", ""
                self._arrived.set()

    async def wait_for(self, name: str, within: float, **fields: Any) -> dict:
        deadline = time.monotonic() + within
        while True:
            for event, data in self.events:
                if event == name and all(data.get(k) == v for k, v in fields.items()):
                    return data
            left = deadline - time.monotonic()
            assert left > 0, f"no {name} {fields} within {within} s: {self.events}"
            self._arrived.clear()
            try:
                async with asyncio.timeout(left):
                    await self._arrived.wait()
            except TimeoutError:
                pass

    async def close(self) -> None:
        self._task.cancel()
        await self.response.aclose()


@asynccontextmanager
async def stream(client: httpx.AsyncClient, headers: dict[str, str]) -> AsyncIterator[Stream]:
    request = client.build_request("GET", f"{BASE}/events/stream", headers=headers)
    response = await client.send(request, stream=True)
    assert response.status_code == 200, (await response.aread()).decode()
    assert response.headers["content-type"].startswith("text/event-stream")
    opened = Stream(response)
    try:
        yield opened
    finally:
        await opened.close()


async def _enqueue(db: Database, tenant: str) -> int:
    async with db.begin() as conn:
        (job_id,) = await enqueue_many(
            conn,
            [JobSpec(type=LIVE_NOOP, tenant_id=tenant)],
            now=await db.now(),
            job_types=job_types_for_tests(),
        )
    return job_id


async def test_a_settled_job_reaches_its_tenants_stream_only(
    api: Api, db: Database, db_url: str
) -> None:
    monitor = await api.token("mon", INSTANCE_MONITOR, tenants=("default",))
    stranger = await api.token("other-mon", INSTANCE_MONITOR, tenants=("acme",))
    app = create_app(db)
    # PostgreSQL: the worker is another process's (its own Database), so the
    # change crosses by NOTIFY; SQLite: the worker shares the process
    worker_db = db if db.is_sqlite else Database(db_url)
    stop = asyncio.Event()
    worker = runtime_for(worker_db).worker(maintenance=False)  # the engine's handlers and ours
    running = asyncio.ensure_future(worker.run(stop))
    try:
        async with (
            served(app) as base,
            httpx.AsyncClient(base_url=base, timeout=30) as client,
            stream(client, monitor) as mine,
            stream(client, stranger) as theirs,
        ):
            hello = await mine.wait_for("hello", 5)
            assert hello["scope"] == ("process" if db.is_sqlite else "database")
            await theirs.wait_for("hello", 5)
            await asyncio.wait_for(worker.started.wait(), 10)
            await _enqueue(db, "default")
            started = time.monotonic()
            change = await mine.wait_for("change", 2.0, topic="jobs", tenant="default")
            assert time.monotonic() - started < 2.0
            assert change == {"topic": "jobs", "tenant": "default", "instanceIds": []}
            await asyncio.sleep(0.5)  # what the other tenant's stream got meanwhile
            assert [e for e in theirs.events if e[0] == "change"] == []
            # its own tenant's job does reach it
            await _enqueue(db, "acme")
            await theirs.wait_for("change", 2.0, topic="jobs", tenant="acme")
            assert all(d["tenant"] == "default" for e, d in mine.events if e == "change")
            # an engine step's job (settled in its own step, L-14) names its instance
            admin = await api.admin()
            await api.deploy(admin, WAIT)
            instance = await api.start(admin, WAIT["key"], form={})
            await mine.wait_for("change", 2.0, topic="instances", instanceIds=[instance["id"]])
            await mine.wait_for("change", 2.0, topic="health", tenant="default")
    finally:
        stop.set()
        await asyncio.wait_for(running, 30)
        if worker_db is not db:
            await worker_db.dispose()


async def test_the_stream_authenticates_like_the_api(api: Api) -> None:
    anonymous = await api.client.get(f"{BASE}/events/stream")
    assert anonymous.status_code == 401
    assert anonymous.json()["code"] == "unauthenticated"
    wrong = await api.client.get(
        f"{BASE}/events/stream", headers={"Authorization": "Bearer not-a-token"}
    )
    assert wrong.status_code == 401
    actor = await api.token("actor", TASK_ACT)
    refused = await api.client.get(f"{BASE}/events/stream", headers=actor)
    assert refused.status_code == 403
    assert refused.json()["code"] == "forbidden"
    # a token in the URL is no token: only the header authenticates
    token = actor["Authorization"].split()[1]
    assert (await api.client.get(f"{BASE}/events/stream?token={token}")).status_code == 401


async def test_a_server_stops_promptly_with_an_open_stream(api: Api, db: Database) -> None:
    monitor = await api.token("mon", INSTANCE_MONITOR)
    runtime = runtime_for(db)
    port = _free_port()
    stop = asyncio.Event()
    serving = asyncio.ensure_future(serve_api(runtime, host="127.0.0.1", port=port, stop=stop))
    base = f"http://127.0.0.1:{port}"
    async with httpx.AsyncClient(base_url=base, timeout=30) as client:
        deadline = time.monotonic() + 20
        while True:
            try:
                (await client.get("/api/openapi.json")).raise_for_status()
                break
            except httpx.HTTPError:
                assert time.monotonic() < deadline, "the server never came up"
                await asyncio.sleep(0.05)
        async with stream(client, monitor) as opened:
            await opened.wait_for("hello", 5)
            started = time.monotonic()
            stop.set()
            await asyncio.wait_for(serving, 5)
            assert time.monotonic() - started < 3.0
    assert serving.exception() is None


@pytest.mark.parametrize("tenants", [("*",), ("default",)])
def test_a_change_of_no_tenant_reaches_only_who_sees_every_tenant(
    tenants: tuple[str, ...],
) -> None:
    caller = Caller("u", "u", (), frozenset(), tenants)
    assert visible(caller, Change("jobs", None)) is (tenants == ("*",))
    assert visible(caller, Change("jobs", "default")) is True
    assert visible(caller, Change("jobs", "acme")) is (tenants == ("*",))
