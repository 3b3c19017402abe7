"""The chaos test of issue 17 (SPEC L-10, L-12, L-14, L-17, L-20, L-21): real
worker processes on a throwaway PostgreSQL cluster run jobs with step
receipts (internal effects) and unsafe external calls while workers are
SIGKILLed every few seconds and the database is restarted once. Afterwards:
every job is terminal, every internal effect happened exactly once, no
unsafe send reached the receiver twice, and every job whose step committed
before a kill ended succeeded. The figures are printed (``-s``)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from flowledger.db.database import Database
from flowledger.db.migrate import upgrade
from flowledger.ledger.models import JobSpec
from tests.e2e.test_worker_processes import TIMINGS
from tests.hardening import chaos_handlers
from tests.hardening.pgcluster import Cluster, throwaway_cluster
from tests.ledger_access import enqueue_many

pytestmark = pytest.mark.slow
HERE = Path(__file__).parent
INTERNAL_JOBS = 1290
UNSAFE_JOBS = 215  # every seventh job (n % 7 == 6)
KILLS = 3


class Receiver:
    """A real HTTP server on 127.0.0.1 counting the POSTs per job."""

    def __init__(self) -> None:
        self.hits: Counter[int] = Counter()
        lock = threading.Lock()
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                with lock:
                    hits[int(body["job"])] += 1
                self.send_response(201)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/send"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def cluster() -> Iterator[Cluster]:
    with throwaway_cluster() as c:
        yield c


def _env(url: str, receiver: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWLEDGER_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    env["FLOWLEDGER_DATABASE_URL"] = url
    env["CHAOS_RECEIVER"] = receiver
    env.update(TIMINGS)
    return env


class Fleet:
    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env, self.folder = env, folder
        self.procs: list[subprocess.Popen[bytes]] = []
        self.logs: list[Path] = []

    def start(self) -> subprocess.Popen[bytes]:
        path = self.folder / f"worker-{len(self.procs)}.log"
        with path.open("w") as log:
            proc = subprocess.Popen(
                [sys.executable, "-m", "flowledger", "worker", "--import", "chaos_handlers"],
                env=self.env, cwd=self.folder, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        self.procs.append(proc)
        self.logs.append(path)
        return proc

    def stop(self) -> None:
        for proc in self.procs:
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()

    def text(self) -> str:
        return "\n".join(p.read_text(errors="replace") for p in self.logs)


async def _all(db: Database, sql: str) -> list[Any]:
    async with db.read() as conn:
        return list((await conn.execute(text(sql))).all())


async def _one(db: Database, sql: str) -> int:
    return int((await _all(db, sql))[0][0])


async def _poll(db: Database, sql: str) -> int | None:
    try:
        return await _one(db, sql)
    except Exception:  # the database is restarting
        return None


async def test_chaos_kills_and_a_database_restart_lose_nothing_and_send_nothing_twice(
    cluster: Cluster, tmp_path: Path
) -> None:
    started = time.monotonic()
    await asyncio.to_thread(cluster.start)
    db = Database(cluster.url)
    await upgrade(db)
    async with db.begin() as conn:
        await conn.execute(text("CREATE TABLE chaos_rows (id serial PRIMARY KEY, job_id bigint)"))
        await conn.execute(
            text("CREATE TABLE chaos_sends (id serial PRIMARY KEY, job_id bigint, status int)")
        )
        now = await db.now()
        specs = [  # interleaved: unsafe calls run throughout, kills included
            JobSpec(
                type=chaos_handlers.UNSAFE_TYPE if n % 7 == 6 else chaos_handlers.INTERNAL_TYPE,
                payload={"n": n},
            )
            for n in range(INTERNAL_JOBS + UNSAFE_JOBS)
        ]
        await enqueue_many(conn, specs, now=now)
    total = INTERNAL_JOBS + UNSAFE_JOBS
    terminal = "SELECT count(*) FROM workflow_jobs WHERE status IN ('succeeded', 'dead')"
    with Receiver() as receiver:
        fleet = Fleet(_env(cluster.url, receiver.url), tmp_path)
        kills = restarts = 0
        try:
            for _ in range(3):
                fleet.start()
            # kill while work is in flight: the ledger drains fast, so the
            # kills come as soon as jobs run, and the loop ends (the assert
            # below then says so) if the work finished before every kill
            while kills < KILLS and (await _poll(db, terminal) or 0) < total:
                busy = await _all(
                    db,
                    "SELECT n.pid, count(*) FROM workflow_jobs j "
                    "JOIN system_scheduler_nodes n ON n.id = j.lease_owner "
                    "WHERE j.status = 'running' GROUP BY n.pid ORDER BY count(*) DESC",
                )
                alive = {p.pid: p for p in fleet.procs if p.poll() is None}
                victims = [alive[row.pid] for row in busy if row.pid in alive]
                if victims:
                    victims[0].send_signal(signal.SIGKILL)
                    victims[0].wait(timeout=10)
                    kills += 1
                    fleet.start()
                if kills == 2 and restarts == 0:
                    await db.dispose()
                    await asyncio.to_thread(cluster.restart)
                    restarts += 1
                await asyncio.sleep(1.5 if victims else 0.2)
            assert (kills, restarts) == (KILLS, 1), "the work finished before the kills"
            deadline = time.monotonic() + 150
            done = 0
            while time.monotonic() < deadline:
                done = await _poll(db, terminal) or done
                if done >= total:
                    break
                await asyncio.sleep(0.5)
            statuses = await _all(db, "SELECT status, count(*) FROM workflow_jobs GROUP BY status")
            assert done == total, (statuses, fleet.text()[-3000:])
        finally:
            fleet.stop()
        hits = dict(receiver.hits)
    elapsed = time.monotonic() - started

    rows = await _one(db, "SELECT count(*) FROM chaos_rows")
    distinct_rows = await _one(db, "SELECT count(DISTINCT job_id) FROM chaos_rows")
    internal_ok = await _one(
        db, f"SELECT count(*) FROM workflow_jobs WHERE type = '{chaos_handlers.INTERNAL}' "
        "AND status = 'succeeded'"
    )  # fmt: skip
    unsafe = await _all(
        db,
        "SELECT id, status, last_error_code FROM workflow_jobs "
        f"WHERE type = '{chaos_handlers.UNSAFE}'",
    )
    committed_not_succeeded = await _one(
        db,
        "SELECT count(DISTINCT j.id) FROM workflow_jobs j JOIN workflow_job_effects e "
        "ON e.job_id = j.id WHERE j.status <> 'succeeded'",
    )
    replays = await _one(
        db, "SELECT count(*) FROM workflow_job_executions WHERE error_code = 'lease_expired'"
    )
    greenlets = await _one(
        db, "SELECT count(*) FROM workflow_job_executions WHERE error_code = 'MissingGreenlet'"
    )
    await db.dispose()
    dead_unconfirmed = [u for u in unsafe if u.status == "dead"]
    sent_twice = {job: n for job, n in hits.items() if n > 1}
    print(
        f"\nchaos: jobs={total} (internal={INTERNAL_JOBS}, unsafe={UNSAFE_JOBS}) "
        f"workers={len(fleet.procs)} kills={kills} db_restarts={restarts} "
        f"lease_expired_attempts={replays} internal_rows={rows} "
        f"unsafe_succeeded={len(unsafe) - len(dead_unconfirmed)} "
        f"unsafe_dead_unconfirmed={len(dead_unconfirmed)} receiver_posts={sum(hits.values())} "
        f"sent_twice={len(sent_twice)} elapsed_s={elapsed:.1f}"
    )
    assert rows == distinct_rows == internal_ok == INTERNAL_JOBS  # every effect exactly once
    assert sent_twice == {}  # no unsafe send twice
    for job in unsafe:
        if job.status == "succeeded":
            assert hits.get(job.id) == 1, job
        else:
            assert job.last_error_code == "external_outcome_unconfirmed", job
    assert committed_not_succeeded == 0  # a committed step always ends succeeded
    assert greenlets == 0
    log = fleet.text()
    assert "MissingGreenlet" not in log and "Traceback" not in log, log[-3000:]
