"""The alert evaluator in real ``flowledger worker`` processes (SPEC O-22,
L-20): two workers on one PostgreSQL database, each running the
leader-gated evaluator every half second, against a real SMTP server. The
rule fires once — one event, one notification job, one email — and
resolves once, however many passes both workers make."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, TextIO

import pytest
from sqlalchemy import func, select, update

from flowledger.clock import SystemClock
from flowledger.db.alert_schema import workflow_alert_events
from flowledger.db.database import Database
from flowledger.db.schema import metadata, workflow_jobs
from flowledger.ops.alerts.evaluator import ALERT_NOTIFICATION
from flowledger.ops.alerts.rules import RuleFields, create_rule
from tests.dbutil import pg_database
from tests.notify.servers import Collector
from tests.ops.rows import add_job

pytestmark = pytest.mark.slow


@pytest.fixture
def pg_url() -> Iterator[str]:
    with pg_database() as url:
        yield url


def _env(url: str, smtp_port: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWLEDGER_")}
    env.update(
        FLOWLEDGER_DATABASE_URL=url,
        FLOWLEDGER_ALERT_EVAL_INTERVAL_S="0.5",
        FLOWLEDGER_POLL_INTERVAL_S="0.3",
        FLOWLEDGER_HEARTBEAT_INTERVAL_S="1",
        FLOWLEDGER_SHUTDOWN_GRACE_S="3",
        FLOWLEDGER_SMTP_HOST="127.0.0.1",
        FLOWLEDGER_SMTP_PORT=str(smtp_port),
        FLOWLEDGER_SMTP_TIMEOUT_S="5",
        FLOWLEDGER_SECRET_KEY=os.environ["FLOWLEDGER_SECRET_KEY"],
    )
    return env


def _start_worker(env: dict[str, str], cwd: Path, log: TextIO) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [sys.executable, "-m", "flowledger", "worker"],
        env=env,
        cwd=cwd,
        stdout=log,
        stderr=subprocess.STDOUT,
    )


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


async def _counts(db: Database) -> tuple[int, int]:
    async with db.read() as conn:
        events = (
            await conn.execute(select(func.count()).select_from(workflow_alert_events))
        ).scalar_one()
        jobs = (
            await conn.execute(
                select(func.count()).where(workflow_jobs.c.type == ALERT_NOTIFICATION)
            )
        ).scalar_one()
    return int(events), int(jobs)


async def _wait(condition: Any, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.2)


async def test_two_worker_processes_fire_and_resolve_once_O22_L20(
    pg_url: str, tmp_path: Path, smtp: Collector
) -> None:
    db = Database(pg_url)
    clock = SystemClock()
    async with db.engine.begin() as conn:
        await conn.run_sync(metadata.create_all)
    async with db.begin() as conn:
        await create_rule(
            conn,
            tenant="acme",
            fields=RuleFields(
                "dead letters", "dead_letters", "gt", 0, 0, email_to=["ops@example.com"]
            ),
            actor="test",
            now=clock.now(),
        )
    dead = await add_job(db, clock.now(), tenant_id="acme", status="dead", last_error="boom")
    env = _env(pg_url, smtp.port)
    logs = [(tmp_path / f"w{i}.log").open("w") for i in range(2)]
    procs = [_start_worker(env, tmp_path, log) for log in logs]
    try:
        await _wait(lambda: len(smtp.envelopes) >= 1, 60, "the firing email")
        await asyncio.sleep(3)  # many more passes by both workers
        assert len(smtp.envelopes) == 1
        assert await _counts(db) == (1, 1)

        async with db.begin() as conn:
            await conn.execute(
                update(workflow_jobs).where(workflow_jobs.c.id == dead).values(status="canceled")
            )
        await _wait(lambda: len(smtp.envelopes) >= 2, 30, "the resolved email")
        await asyncio.sleep(3)
        assert len(smtp.envelopes) == 2
        assert await _counts(db) == (2, 2)
        assert all(p.poll() is None for p in procs), "a worker exited early"
    finally:
        _stop(procs)
        for log in logs:
            log.close()
        await db.dispose()
