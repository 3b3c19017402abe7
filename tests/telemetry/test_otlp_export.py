"""Tracing configured only by the standard ``OTEL_*`` variables exports over
OTLP/HTTP (issue 33 item 1), on both backends: ``flowledger serve`` and
``flowledger worker`` run as two processes with
``OTEL_EXPORTER_OTLP_ENDPOINT`` naming a real OTLP receiver on 127.0.0.1
(:mod:`tests.telemetry.otlp_receiver`, decoding the protobuf requests), and
the approval driven over HTTP arrives there as one trace with the expected
span tree — the attempt in the worker process finding its parent, the
server process's dispatch span, from the job row alone."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from sqlalchemy import func, select

from flowledger.api.auth import create_user, issue_token
from flowledger.api.permissions import ALL_PERMISSIONS
from flowledger.db.database import Database
from flowledger.db.schema import system_scheduler_nodes
from tests.outbound.receivers import Receiver
from tests.telemetry.approval_path import (
    CALLER_TRACE,
    SECRET,
    SpanRow,
    Walked,
    check_tree,
    walk_approval,
)
from tests.telemetry.otlp_receiver import OtlpReceiver, otlp_receiver
from tests.telemetry.test_trace_tree import operation_key

SERVICE = "flowledger-otlp-test"


@pytest.fixture
def collector() -> Iterator[OtlpReceiver]:
    with otlp_receiver() as found:
        yield found


@pytest.fixture
async def receiver() -> object:
    server = Receiver()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def process_env(db_url: str, collector: OtlpReceiver, receiver: Receiver) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("FLOWLEDGER_", "OTEL_"))}
    env["FLOWLEDGER_SECRET_KEY"] = os.environ["FLOWLEDGER_SECRET_KEY"]
    env["FLOWLEDGER_DATABASE_URL"] = db_url
    env["FLOWLEDGER_CALLBACK_SECRET"] = SECRET
    env["FLOWLEDGER_OUTBOUND_ALLOW"] = receiver.endpoint
    env["FLOWLEDGER_POLL_INTERVAL_S"] = "0.2"
    # the standard variables, and nothing else, turn tracing on
    env["OTEL_EXPORTER_OTLP_ENDPOINT"] = collector.endpoint
    env["OTEL_SERVICE_NAME"] = SERVICE
    env["OTEL_BSP_SCHEDULE_DELAY"] = "200"
    return env


class Processes:
    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env, self.folder = env, folder
        self.all: list[tuple[subprocess.Popen[bytes], Path]] = []

    def start(self, *args: str) -> None:
        log = self.folder / f"{args[0]}.log"
        with log.open("wb") as out:
            proc = subprocess.Popen(
                [sys.executable, "-m", "flowledger", *args],
                env=self.env,
                cwd=self.folder,
                stdout=out,
                stderr=subprocess.STDOUT,
            )
        self.all.append((proc, log))

    def logs(self) -> str:
        return "\n".join(f"--- {log.name}\n{log.read_text()[-3000:]}" for _, log in self.all)

    def stop(self) -> None:
        for proc, _ in self.all:
            if proc.poll() is None:
                proc.terminate()
        for proc, _ in self.all:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


async def admin_headers(db: Database) -> dict[str, str]:
    now = await db.now()
    async with db.begin() as conn:
        await create_user(
            conn, "root", roles=(), permissions=ALL_PERMISSIONS, tenants=["*"], now=now
        )
        token = await issue_token(conn, "root", now=now)
    return {"Authorization": f"Bearer {token}"}


async def until_serving(client: httpx.AsyncClient, processes: Processes) -> None:
    deadline = time.monotonic() + 60
    while True:
        try:
            if (await client.get("/api/openapi.json")).status_code == 200:
                return
        except httpx.TransportError:
            pass
        assert time.monotonic() < deadline, processes.logs()
        await asyncio.sleep(0.2)


async def until_worker_registered(db: Database, processes: Processes) -> None:
    """The worker process is up once its node row is written: on a loaded
    machine its start (imports, exporter set-up) alone can take longer than
    the walk's patience for the dispatch, which measures the engine, not
    the interpreter's start."""
    deadline = time.monotonic() + 90
    while True:
        async with db.begin() as conn:
            found = await conn.scalar(select(func.count()).select_from(system_scheduler_nodes))
        if found:
            return
        assert time.monotonic() < deadline, processes.logs()
        await asyncio.sleep(0.2)


async def test_spans_arrive_at_an_otlp_receiver_as_one_trace(
    empty_db_url: str,
    receiver: Receiver,
    collector: OtlpReceiver,
    tmp_path: Path,
) -> None:
    processes = Processes(process_env(empty_db_url, collector, receiver), tmp_path)
    port = free_port()
    db = Database(empty_db_url)
    processes.start("serve", "--host", "127.0.0.1", "--port", str(port))  # migrates
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", trust_env=False, timeout=30
        ) as client:
            await until_serving(client, processes)
            headers = await admin_headers(db)
            processes.start("worker")
            await until_worker_registered(db, processes)
            walked = await walk_approval(client, headers, receiver)
    finally:
        processes.stop()  # each flushes its batch of spans at exit
    try:
        await check_export(collector, walked, await operation_key(db, walked.instance_id))
    finally:
        await db.dispose()


async def check_export(collector: OtlpReceiver, walked: Walked, key: str) -> None:
    deadline = time.monotonic() + 20
    wanted = {"engine.step", "job.attempt external_dispatch", "POST"}

    def arrived() -> list[SpanRow]:
        return [s for s in collector.snapshot() if s.trace_id == CALLER_TRACE]

    while not wanted <= {s.name for s in arrived()}:
        assert time.monotonic() < deadline, arrived()
        await asyncio.sleep(0.1)
    assert collector.services == {SERVICE}
    check_tree(collector.snapshot(), walked, key)
