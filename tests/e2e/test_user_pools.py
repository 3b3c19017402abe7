"""User-defined pools with a real ``flowledger worker`` process, on SQLite
and PostgreSQL (issue 15 item 5; SPEC L-2, L-6, L-7, L-8).

The worker runs ``--pool workflow-ledger=4 --pool reports=1`` while the
settings say ``FLOWLEDGER_POOLS="emails=2,reports=3"``: ``--pool`` wins, so
the node registers exactly those two pools, the ``reports`` jobs run one at a
time (no two of their intervals overlap), the built-in pool keeps running
beside them (its first job ends before the last report starts, and its jobs
overlap one another), and the ``emails`` job — a declared pool no worker
runs — waits, pending and never attempted, while the runtime status counts
it in the backlog and the diagnostics show it on an ``emails`` pool card.
The poll interval is 30 s, so the jobs enqueued after start-up are claimed
only because their pool's wake hint arrives. Also: ``--pool`` and
``FLOWLEDGER_POOLS`` mistakes, and a handler module naming an undeclared
pool, exit 2 with a message naming the field.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select

from flowledger.clock import SystemClock
from flowledger.db.database import Database
from flowledger.db.schema import system_scheduler_nodes as nodes
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.models import JobSpec
from flowledger.ledger.types import JobType
from flowledger.ops.runtime.engine_diagnostics import engine_diagnostics
from flowledger.ops.runtime.status import runtime_status
from flowledger.settings import Settings
from flowledger.states import Pool
from tests.ledger_access import ledger_of

HERE = Path(__file__).parent
REPORT, TICK, EMAIL = "pool_report", "pool_tick", "pool_email"  # as in pool_handlers.py
REPORTS, TICKS = 6, 40
WORKER = [sys.executable, "-m", "flowledger", "worker", "--import", "pool_handlers"]


# the test process enqueues these types without importing the handlers
REPORT_TYPE, TICK_TYPE = JobType(REPORT, "reports"), JobType(TICK, Pool.LEDGER)
EMAIL_TYPE = JobType(EMAIL, "emails")


def _env(database_url: str, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWLEDGER_")}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH", "")) if p)
    env.update(
        FLOWLEDGER_DATABASE_URL=database_url,
        FLOWLEDGER_POLL_INTERVAL_S="30",
        FLOWLEDGER_SHUTDOWN_GRACE_S="5",
        FLOWLEDGER_HEARTBEAT_INTERVAL_S="1",
        **extra,
    )
    return env


async def _wait(
    db: Database, proc: subprocess.Popen[bytes], log: Path, query: Any, target: int
) -> None:
    deadline = asyncio.get_running_loop().time() + 25  # < the 30 s poll: wake hints only
    while True:
        async with db.read() as conn:
            value = int((await conn.execute(query)).scalar_one())
        if value >= target:
            return
        if proc.poll() is not None or asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{value}/{target}; worker log:\n{_tail(log)}")
        await asyncio.sleep(0.1)


def _tail(log: Path) -> str:
    return log.read_text(errors="replace")[-3000:]


def _start_worker(db_url: str, folder: Path, log: Path) -> subprocess.Popen[bytes]:
    """``flowledger worker`` running ``--pool workflow-ledger=4 --pool
    reports=1`` while the settings name other pools."""
    with log.open("w") as out:
        return subprocess.Popen(
            [*WORKER, "--pool", "workflow-ledger=4", "--pool", "reports=1"],
            env=_env(db_url, FLOWLEDGER_POOLS="emails=2,reports=3"),
            cwd=folder,
            stdout=out,
            stderr=subprocess.STDOUT,
        )


def _max_overlap(intervals: list[tuple[float, float]]) -> int:
    """How many of ``intervals`` ran at once, at most."""
    edges = sorted([(s, 1) for s, _ in intervals] + [(e, -1) for _, e in intervals])
    running = most = 0
    for _, step in edges:
        running += step
        most = max(most, running)
    return most


async def test_a_user_pool_with_one_slot_runs_one_job_at_a_time(
    db: Database, db_url: str, tmp_path: Path
) -> None:
    log = tmp_path / "worker.log"
    proc = _start_worker(db_url, tmp_path, log)
    try:
        await _wait(db, proc, log, select(func.count()).select_from(nodes), 1)
        await asyncio.sleep(0.5)  # the pools have made their first claim and wait
        specs = [JobSpec(REPORT_TYPE) for _ in range(REPORTS)] + [JobSpec(EMAIL_TYPE)]
        specs += [JobSpec(TICK_TYPE) for _ in range(TICKS)]
        async with db.begin() as conn:
            await ledger_of(conn).jobs_insert(conn, specs, now=SystemClock().now())
        done = select(func.count()).where(jobs.c.status == "succeeded")
        await _wait(db, proc, log, done, REPORTS + TICKS)
        async with db.read() as conn:
            rows = (
                await conn.execute(
                    select(jobs.c.type, jobs.c.pool, jobs.c.status, jobs.c.attempts, jobs.c.result)
                )
            ).all()
            node = (await conn.execute(select(nodes.c.pools))).scalar_one()
        # the read models take user pools as they come (read-only, SPEC L-23, O-18)
        status = await runtime_status(db)
        diagnostics = await engine_diagnostics(db, now=SystemClock().now(), settings=Settings())
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert node == {"workflow-ledger": 4, "reports": 1}  # --pool replaced the settings
    reports = [(r.result["started"], r.result["ended"]) for r in rows if r.type == REPORT]
    ticks = [(r.result["started"], r.result["ended"]) for r in rows if r.type == TICK]
    assert {r.pool for r in rows if r.type == REPORT} == {"reports"}
    assert len(reports) == REPORTS and len(ticks) == TICKS
    assert _max_overlap(reports) == 1  # slots=1: never two reports at once
    assert _max_overlap(ticks) > 1  # the built-in pool ran its 4 slots meanwhile
    assert min(e for _, e in ticks) < max(s for s, _ in reports)
    (email,) = [r for r in rows if r.type == EMAIL]
    assert (email.pool, email.status, email.attempts) == ("emails", "pending", 0)
    assert proc.returncode == 0, _tail(log)
    assert status["backlog"] == 1  # the emails job
    cards = {card["pool"]: card for card in diagnostics["queue"]["pools"]}
    assert (cards["emails"]["pending"], cards["emails"]["due"]) == (1, 1)


def _worker_fails(tmp_path: Path, *args: str, **env: str) -> str:
    result = subprocess.run(
        [sys.executable, "-m", "flowledger", "worker", *args],
        env=_env(f"sqlite:///{tmp_path / 'unused.db'}", **env),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2, result.stderr
    assert "Traceback" not in result.stderr
    return " ".join(result.stderr.split())  # the console may wrap long lines


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["--pool", "reports=0"], {}, "--pool: pool 'reports' needs a slot count from 1 to 256"),
        (["--pool", "Reports=1"], {}, "invalid pool name 'Reports'"),
        (["--pool", "reports"], {}, "--pool: 'reports' is not NAME=SLOTS"),
        ([], {"FLOWLEDGER_POOLS": "emails=two"}, "FLOWLEDGER_POOLS: pool 'emails' needs a slot"),
        (
            [],
            {"FLOWLEDGER_POOLS": "workflow-ledger=2"},
            "FLOWLEDGER_POOLS: 'workflow-ledger' is a built-in pool",
        ),
        (
            ["--import", "pool_handlers", "--pool", "reports=1"],
            {},
            "job type 'pool_email' names unknown pool 'emails'",
        ),
    ],
)
def test_pool_mistakes_exit_2_naming_the_field(
    tmp_path: Path, args: list[str], env: dict[str, str], expected: str
) -> None:
    assert expected in _worker_fails(tmp_path, *args, **env)
