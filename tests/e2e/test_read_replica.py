"""The console's read models on a streaming replica (issue 34 item 6), on
real servers: a primary and a hot-standby replica of it (``pg_basebackup
-R -X stream``), and the API served on 127.0.0.1 by a runtime built from
settings with ``read_database_url`` set.

With the replica's replay paused (``pg_wal_replay_pause()``), an instance
started through the API is on the primary — the start answers with it, and
its approval task is listed — while the instance list, its counts, the
export and the analytics totals (read on the replica) do not have it yet;
the runtime status reports the replica's lag. The approvals still work
while the replica is paused (they read the primary to decide). Once replay
resumes, the list catches up and the lag drops to 0. Without the read
routing, the list shows the new instance at once and the test fails."""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
import psycopg
import pytest

from flowledger.access.permissions import ALL_PERMISSIONS
from flowledger.access.tokens import create_user, issue_token
from flowledger.cli.serve import serve_api
from flowledger.db.database import Database
from flowledger.db.migrate import upgrade
from flowledger.runtime import build_runtime
from flowledger.settings import Settings
from tests.e2e.pg_servers import free_port, primary_and_replica

ASK = {
    "key": "ask",
    "name": "Ask",
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "ok", "type": "approval", "assignees": {"users": ["admin"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [{"from": "start", "to": "ok"}, {"from": "ok", "to": "end"}],
}


async def _until(check: Callable[[], Awaitable[Any]], within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while True:
        value = await check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def _on_replica(url: str, sql: str) -> Any:
    async with await psycopg.AsyncConnection.connect(url, autocommit=True) as conn:
        row = await (await conn.execute(sql)).fetchone()
    return None if row is None else row[0]


@pytest.mark.slow
async def test_console_reads_come_from_the_replica_and_decisions_from_the_primary() -> None:
    with primary_and_replica() as (primary_url, replica_url):
        primary = Database(primary_url)
        await upgrade(primary)
        async with primary.begin() as conn:
            now = await primary.now()
            await create_user(
                conn, "admin", roles=["admin"], permissions=ALL_PERMISSIONS, tenants=["*"], now=now
            )
            token = await issue_token(conn, "admin", now=now)
        await primary.dispose()
        settings = Settings(
            database_url=primary_url,
            read_database_url=replica_url,
            secret_key=os.environ["FLOWLEDGER_SECRET_KEY"],
        )
        runtime = build_runtime(settings=settings)
        assert runtime.replica is not None
        port, stop = free_port(), asyncio.Event()
        serving = asyncio.ensure_future(serve_api(runtime, host="127.0.0.1", port=port, stop=stop))
        base = f"http://127.0.0.1:{port}/api/workflows"
        headers = {"Authorization": f"Bearer {token}"}
        try:
            async with httpx.AsyncClient(base_url=base, headers=headers, timeout=10) as client:

                async def listed() -> list[int]:
                    response = await client.get("/instances")
                    assert response.status_code == 200, response.text
                    return [item["id"] for item in response.json()["items"]]

                async def api_up() -> bool:
                    try:  # the replica has replayed the migration and the admin too
                        return (await client.get("/instances")).status_code == 200
                    except httpx.TransportError:
                        return False

                await _until(api_up, 20, "the API on the replica")
                deployed = await client.post("/definitions", json={"definition": ASK})
                assert deployed.status_code == 201, deployed.text
                first = await client.post("/instances", json={"definitionKey": "ask", "form": {}})
                assert first.status_code == 201, first.text
                first_id = first.json()["id"]
                await _until(lambda: _has(listed, first_id), 10, "the replica to replay it")
                status = (await client.get("/engine/jobs/runtime-status")).json()
                assert status["replicaLagMs"] is not None

                # replay paused: the primary goes on, the replica stands still
                await _on_replica(replica_url, "SELECT pg_wal_replay_pause()")
                second = await client.post("/instances", json={"definitionKey": "ask", "form": {}})
                assert second.status_code == 201, second.text
                second_id = second.json()["id"]
                assert second.json()["status"] == "running"  # the start's answer: the primary
                await asyncio.sleep(0.3)
                assert await listed() == [first_id]  # the list: the replica
                counts = (await client.get("/instances/counts")).json()
                assert counts["total"] == 1
                export = await client.get("/instances/export", params={"format": "csv"})
                assert export.status_code == 200 and export.headers["X-Total-Count"] == "1"
                totals = await client.get("/analytics/totals")
                assert totals.status_code == 200, totals.text
                assert totals.json()["instances"] == 1
                assert totals.json()["pendingTasks"] == 1
                inspection = await client.get("/engine/health-inspection")
                assert inspection.status_code == 200, inspection.text
                lag = (await client.get("/engine/jobs/runtime-status")).json()["replicaLagMs"]
                assert lag is not None and lag >= 300
                replica_rows = await _on_replica(
                    replica_url, f"SELECT count(*) FROM workflow_instances WHERE id = {second_id}"
                )
                assert replica_rows == 0

                # deciding reads the primary: both tasks are there, and both
                # approvals go through while the replica still lags
                tasks = (await client.get("/tasks", params={"status": "pending"})).json()["items"]
                assert sorted(t["instanceId"] for t in tasks) == [first_id, second_id]
                for task in tasks:
                    approved = await client.post(f"/tasks/{task['id']}/approve", json={})
                    assert approved.status_code == 200, approved.text
                detail = (await client.get(f"/instances/{second_id}")).json()
                assert detail["status"] == "approved"
                assert await listed() == [first_id]

                # replay resumed: the replica catches up
                await _on_replica(replica_url, "SELECT pg_wal_replay_resume()")
                await _until(lambda: _has(listed, second_id), 10, "the replica to catch up")

                async def caught_up() -> bool:
                    status = (await client.get("/engine/jobs/runtime-status")).json()
                    return bool(status["replicaLagMs"] == 0)

                await _until(caught_up, 10, "the lag to drop to 0")
                statuses = {
                    i["id"]: i["status"] for i in (await client.get("/instances")).json()["items"]
                }
                assert statuses == {first_id: "approved", second_id: "approved"}
        finally:
            stop.set()
            await serving
            await runtime.aclose()
            await runtime.db.dispose()


async def _has(listed: Callable[[], Awaitable[list[int]]], instance_id: int) -> bool:
    return instance_id in await listed()
