"""flowledger behind PgBouncer in transaction mode (issue 34 item 5), end to
end on real servers: Debian's ``pgbouncer`` (1.18: no prepared statements in
transaction mode) in front of the test server; ``flowledger migrate``,
``flowledger serve`` (the API) and ``flowledger worker`` all reach the
database through it with ``FLOWLEDGER_DB_PREPARED_STATEMENTS=false``, and
the worker's wake listener LISTENs on its own direct session
(``FLOWLEDGER_LISTEN_DATABASE_URL``).

Instances with a 2-second delay and an approval run to ``approved``: the API
starts them (the engine writes through the pooler), the worker wakes on the
hint the API's commit sent — the worker polls only every 60 s and runs the
ledger pool alone (so no settlement of its own wakes it), so each delay
ends on time only because the hint reached the worker's LISTEN past the
pooler — and runs the delay's job, and the approvals go through the API.
PgBouncer's own statistics show the traffic went through it, and the server
shows the one LISTEN session as the only direct one besides the test's.

Without the two settings it fails: psycopg's prepared statements collide on
PgBouncer's shared server connections (``prepared statement "_pg3_…" does
not exist``), and a LISTEN through the pooler never hears the hints (the
delays end only at the next poll, after the deadline)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import httpx
import pytest
from sqlalchemy import text
from sqlalchemy.engine import make_url

from flowledger.access.permissions import ALL_PERMISSIONS
from flowledger.access.tokens import create_user, issue_token
from flowledger.db.database import Database
from tests.dbutil import pg_database
from tests.e2e.pg_servers import free_port, pgbouncer, pgbouncer_show

INSTANCES = 6
NAP_AND_ASK = {
    "key": "nap_and_ask",
    "name": "Nap, then ask",
    "nodes": [
        {"key": "start", "type": "start"},
        {"key": "nap", "type": "delay", "duration": "PT2S"},
        {"key": "ok", "type": "approval", "assignees": {"users": ["admin"]}},
        {"key": "end", "type": "end"},
    ],
    "edges": [
        {"from": "start", "to": "nap"},
        {"from": "nap", "to": "ok"},
        {"from": "ok", "to": "end"},
    ],
}


@pytest.fixture
def direct_url() -> Iterator[str]:
    with pg_database() as url:
        yield url


def _env(database_url: str, listen_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWLEDGER_")}
    env.update(
        FLOWLEDGER_DATABASE_URL=database_url,
        FLOWLEDGER_LISTEN_DATABASE_URL=listen_url,
        FLOWLEDGER_DB_PREPARED_STATEMENTS="false",
        FLOWLEDGER_SECRET_KEY=os.environ["FLOWLEDGER_SECRET_KEY"],
        FLOWLEDGER_POLL_INTERVAL_S="60",
        FLOWLEDGER_HEARTBEAT_INTERVAL_S="1",
        FLOWLEDGER_SHUTDOWN_GRACE_S="5",
    )
    return env


class Processes:
    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env, self.folder = env, folder
        self.procs: list[tuple[str, subprocess.Popen[bytes], TextIO]] = []

    def start(self, name: str, *args: str) -> None:
        log = (self.folder / f"{name}.log").open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "flowledger", *args],
            env=self.env,
            cwd=self.folder,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        self.procs.append((name, proc, log))

    def logs(self) -> str:
        parts = []
        for name, _proc, log in self.procs:
            log.flush()
            lines = (self.folder / f"{name}.log").read_text(errors="replace").splitlines()
            parts.append(f"--- {name} ---\n" + "\n".join(lines[-25:]))
        return "\n".join(parts)

    def check_alive(self) -> None:
        for name, proc, _log in self.procs:
            if proc.poll() is not None:
                raise AssertionError(f"{name} exited early\n{self.logs()}")

    def stop(self) -> None:
        for _name, proc, _log in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for _name, proc, log in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()


async def _admin_token(db: Database) -> str:
    async with db.begin() as conn:
        now = await db.now()
        await create_user(
            conn, "admin", roles=["admin"], permissions=ALL_PERMISSIONS, tenants=["*"], now=now
        )
        return await issue_token(conn, "admin", now=now)


async def _scalar(db: Database, sql: str, **params: Any) -> Any:
    async with db.read() as conn:
        return (await conn.execute(text(sql), params)).scalar_one()


async def _until(check: Any, procs: Processes, within: float, what: str) -> Any:
    deadline = time.monotonic() + within
    while True:
        value = await check()
        if value:
            return value
        procs.check_alive()
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}\n{procs.logs()}")
        await asyncio.sleep(0.1)


@pytest.mark.slow
async def test_an_instance_runs_end_to_end_through_pgbouncer_in_transaction_mode(
    direct_url: str, tmp_path: Path
) -> None:
    name = make_url(direct_url).database
    with pgbouncer(direct_url) as bouncer_port:
        pooled_url = make_url(direct_url).set(port=bouncer_port).render_as_string(False)
        env = _env(pooled_url, direct_url)
        migrated = await asyncio.to_thread(
            subprocess.run,
            [sys.executable, "-m", "flowledger", "migrate"],
            env=env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert migrated.returncode == 0, migrated.stdout + migrated.stderr
        db = Database(direct_url)
        procs = Processes(env, tmp_path)
        try:
            token = await _admin_token(db)
            api_port = free_port()
            procs.start("api", "serve", "--port", str(api_port))
            # the ledger pool alone: no outbound job settles in the worker
            # and wakes its pools on the side — a hint is the only wake-up
            procs.start("worker", "worker", "--pool", "workflow-ledger=4")
            base = f"http://127.0.0.1:{api_port}/api/workflows"
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(base_url=base, headers=headers, timeout=10) as client:

                async def api_up() -> bool:
                    try:
                        return (await client.get("/instances")).status_code == 200
                    except httpx.TransportError:
                        return False

                await _until(api_up, procs, 30, "the API")
                deployed = await client.post("/definitions", json={"definition": NAP_AND_ASK})
                assert deployed.status_code == 201, deployed.text
                ids: list[int] = []

                async def start_and_wait(count: int) -> list[dict[str, Any]]:
                    """Start ``count`` instances; their approvals once every
                    delay has ended, within 2 s of delay plus a margin (far
                    below the worker's 60 s poll: only a wake hint gets the
                    worker there in time)."""
                    started_at = time.monotonic()
                    for _ in range(count):
                        started = await client.post(
                            "/instances", json={"definitionKey": "nap_and_ask", "form": {}}
                        )
                        assert started.status_code == 201, started.text
                        ids.append(started.json()["id"])

                    async def approvals() -> list[dict[str, Any]]:
                        response = await client.get("/tasks", params={"status": "pending"})
                        assert response.status_code == 200, response.text
                        items = response.json()["items"]
                        return items if len(items) == len(ids) else []

                    tasks = await _until(approvals, procs, 12, "the delays to end")
                    assert time.monotonic() - started_at < 12
                    return tasks

                # one first instance: once its delay has run, the worker has
                # polled and sleeps until woken (nothing else is due)
                await start_and_wait(1)
                await asyncio.sleep(1)
                tasks = await start_and_wait(INSTANCES - 1)
                for task in tasks:
                    approved = await client.post(
                        f"/tasks/{task['id']}/approve", json={"comment": "ok"}
                    )
                    assert approved.status_code == 200, approved.text

                async def all_approved() -> bool:
                    statuses = []
                    for instance_id in ids:
                        response = await client.get(f"/instances/{instance_id}")
                        assert response.status_code == 200, response.text
                        statuses.append(response.json()["status"])
                    return statuses == ["approved"] * INSTANCES

                await _until(all_approved, procs, 15, "the instances to end")
            procs.check_alive()
            failed = await _scalar(
                db,
                "SELECT count(*) FROM workflow_jobs WHERE status NOT IN ('succeeded')"
                " AND type = 'delay_wake'",
            )
            assert failed == 0
            woke = await _scalar(db, "SELECT count(*) FROM workflow_jobs WHERE type = 'delay_wake'")
            assert woke == INSTANCES
            # the statements went through PgBouncer: its transactions on the
            # database, and the server's sessions on it (besides the test's own
            # and PgBouncer's) are the worker's LISTEN alone
            stats = {row[0]: row for row in pgbouncer_show(bouncer_port, "STATS")}
            assert int(stats[name][1]) > 100  # total_xact_count
            listeners = await _scalar(
                db,
                "SELECT count(*) FROM pg_stat_activity WHERE datname = :name"
                " AND query ILIKE 'LISTEN%'",
                name=name,
            )
            assert listeners == 1
        finally:
            procs.stop()
            await db.dispose()
