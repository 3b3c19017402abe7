"""Real worker processes on PostgreSQL (SPEC L-6, L-7, L-10, L-14, L-20, L-21).

Covers: three ``flowledger worker`` processes share one database; one is
killed with SIGKILL while it has jobs in flight and a new one is started;
every one of 3,000 jobs still succeeds exactly once as far as its business
write goes — 3,000 rows with 3,000 distinct job ids, because the retry of a
job whose step had committed reuses the receipt (L-14) — the killed worker's
in-flight attempts end ``lease_expired`` through another worker's drain
(L-10, L-20), and the node registry shows the killed node never stopped while
the others stopped on SIGTERM (L-21, L-6). Also: ``flowledger worker
--import`` of a missing module exits with code 2 and says why.
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import pytest
from sqlalchemy import text

from flowledger.db.database import Database
from flowledger.ledger.models import JobSpec
from tests.dbutil import pg_database
from tests.e2e import e2e_handlers
from tests.ledger_access import enqueue_many

HERE = Path(__file__).parent
JOBS = 3_000
TIMINGS = {
    "FLOWLEDGER_LEASE_MS": "3000",
    "FLOWLEDGER_LEASE_RENEW_INTERVAL_S": "1",
    "FLOWLEDGER_DRAIN_INTERVAL_S": "1",
    "FLOWLEDGER_POLL_INTERVAL_S": "0.5",
    "FLOWLEDGER_SHUTDOWN_GRACE_S": "5",
    "FLOWLEDGER_HEARTBEAT_INTERVAL_S": "1",
}


def process_env(database_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWLEDGER_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    env["FLOWLEDGER_DATABASE_URL"] = database_url
    env.update(TIMINGS)
    return env


@dataclass
class WorkerProcess:
    proc: subprocess.Popen[bytes]
    log_path: Path
    log: TextIO

    def tail(self, lines: int = 15) -> str:
        if not self.log.closed:
            self.log.flush()
        content = self.log_path.read_text(errors="replace").splitlines()
        return f"--- worker pid {self.proc.pid} ---\n" + "\n".join(content[-lines:])


class Workers:
    def __init__(self, env: dict[str, str], folder: Path) -> None:
        self.env, self.folder = env, folder
        self.all: list[WorkerProcess] = []

    def start(self) -> WorkerProcess:
        log_path = self.folder / f"worker-{len(self.all)}.log"
        log = log_path.open("w")
        proc = subprocess.Popen(
            [sys.executable, "-m", "flowledger", "worker", "--import", "e2e_handlers"],
            env=self.env,
            cwd=self.folder,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
        worker = WorkerProcess(proc, log_path, log)
        self.all.append(worker)
        return worker

    def by_pid(self, pid: int) -> WorkerProcess:
        return next(w for w in self.all if w.proc.pid == pid)

    def logs(self) -> str:
        return "\n".join(w.tail() for w in self.all)

    def check_alive(self, *, killed: WorkerProcess | None = None) -> None:
        for w in self.all:
            if w is not killed and w.proc.poll() is not None:
                raise AssertionError(f"worker {w.proc.pid} exited early\n{self.logs()}")

    def terminate_all(self) -> None:
        for w in self.all:
            if w.proc.poll() is None:
                w.proc.terminate()
        for w in self.all:
            try:
                w.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                w.proc.kill()
                w.proc.wait()
            w.log.close()


@pytest.fixture
def pg_url() -> Iterator[str]:
    with pg_database() as url:
        yield url


async def scalar(db: Database, sql: str, **params: Any) -> Any:
    async with db.read() as conn:
        return (await conn.execute(text(sql), params)).scalar_one()


async def rows(db: Database, sql: str, **params: Any) -> list[Any]:
    async with db.read() as conn:
        return list((await conn.execute(text(sql), params)).all())


async def wait_for(
    db: Database, workers: Workers, sql: str, target: int, *, within: float, killed: Any = None
) -> int:
    deadline = asyncio.get_running_loop().time() + within
    while True:
        value = int(await scalar(db, sql))
        if value >= target:
            return value
        workers.check_alive(killed=killed)
        if asyncio.get_running_loop().time() > deadline:
            summary = await rows(db, "SELECT status, count(*) FROM workflow_jobs GROUP BY status")
            raise AssertionError(
                f"timed out at {value}/{target} for {sql!r}; jobs {summary}\n{workers.logs()}"
            )
        await asyncio.sleep(0.2)


SUCCEEDED = "SELECT count(*) FROM workflow_jobs WHERE status = 'succeeded'"


@pytest.mark.slow
async def test_killed_worker_loses_no_job_and_writes_nothing_twice(
    pg_url: str, tmp_path: Path
) -> None:
    env = process_env(pg_url)
    migrated = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, "-m", "flowledger", "migrate"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert migrated.returncode == 0, migrated.stderr
    db = Database(pg_url)
    workers = Workers(env, tmp_path)
    try:
        async with db.begin() as conn:
            await conn.execute(
                text(
                    "CREATE TABLE e2e_rows (id serial PRIMARY KEY, job_id bigint NOT NULL, "
                    "created_at timestamptz NOT NULL)"
                )
            )
            now = await db.now()
            specs = [JobSpec(type=e2e_handlers.WRITE_ROW, payload={"n": n}) for n in range(JOBS)]
            assert len(await enqueue_many(conn, specs, now=now)) == JOBS
        for _ in range(3):
            workers.start()
        await wait_for(db, workers, SUCCEEDED, JOBS // 3, within=90)

        # kill a worker that holds running jobs right now
        busy = await rows(
            db,
            "SELECT n.pid, count(*) FROM workflow_jobs j "
            "JOIN system_scheduler_nodes n ON n.id = j.lease_owner "
            "WHERE j.status = 'running' GROUP BY n.pid ORDER BY count(*) DESC",
        )
        assert busy, f"no worker holds a running job\n{workers.logs()}"
        victim = workers.by_pid(busy[0].pid)
        victim.proc.send_signal(signal.SIGKILL)
        victim.proc.wait(timeout=10)
        killed_node = await scalar(
            db, "SELECT id FROM system_scheduler_nodes WHERE pid = :pid", pid=victim.proc.pid
        )
        workers.start()

        # reclaimed jobs come back after the 30 s backoff
        await wait_for(db, workers, SUCCEEDED, JOBS, within=120, killed=victim)
        workers.check_alive(killed=victim)
        workers.terminate_all()
        for w in workers.all:
            if w is not victim:
                assert w.proc.returncode == 0, w.tail()

        statuses = await rows(db, "SELECT status, count(*) FROM workflow_jobs GROUP BY status")
        assert [tuple(r) for r in statuses] == [("succeeded", JOBS)]
        written = (await rows(db, "SELECT count(*), count(DISTINCT job_id) FROM e2e_rows"))[0]
        assert tuple(written) == (JOBS, JOBS)
        assert await scalar(db, "SELECT count(*) FROM workflow_job_effects") == JOBS
        expired = await rows(
            db,
            "SELECT node_id, count(*) FROM workflow_job_executions "
            "WHERE status = 'failed' AND error_code = 'lease_expired' GROUP BY node_id",
        )
        assert killed_node in {r.node_id for r in expired}, (expired, killed_node)
        assert (
            await scalar(
                db, "SELECT count(*) FROM workflow_job_executions WHERE status = 'running'"
            )
            == 0
        )

        nodes = {
            r.pid: r.status
            for r in await rows(db, "SELECT pid, status FROM system_scheduler_nodes")
        }
        assert nodes == {w.proc.pid: ("active" if w is victim else "stopped") for w in workers.all}
    finally:
        workers.terminate_all()
        await db.dispose()


def test_worker_with_a_missing_handler_module_exits_2(tmp_path: Path) -> None:
    env = process_env(f"sqlite:///{tmp_path / 'unused.db'}")
    result = subprocess.run(
        [sys.executable, "-m", "flowledger", "worker", "--import", "no_such_module"],
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    message = " ".join(result.stderr.split())  # the console may wrap long lines
    assert result.returncode == 2, result.stderr
    assert "cannot import handler module 'no_such_module'" in message
    assert "No module named 'no_such_module'" in message
    assert "Traceback" not in result.stderr
