"""``flowledger jobs …`` as a user runs it (SPEC L-23 … L-25): subprocesses
(``python -m flowledger jobs …``) on a SQLite file, checking the ``--json``
documents on stdout, the exit codes and the audit rows.

Covers: retry (one, a refused one with a JSON error and exit code 2, a
batch, then listed and shown by ``flowledger batches``), skip (a batch, as
a named ``--actor``), replay ``--preview`` and
``--no-follow``; the reads status, list, show, chain and clusters; and a
replay followed with its progress bar until a real ``flowledger worker``
process has run every job of the batch.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from sqlalchemy import select, update

from flowledger.db.database import Database
from flowledger.db.engine_schema import operation_audit
from flowledger.db.schema import workflow_jobs as jobs
from flowledger.ledger.fingerprint import fingerprint
from flowledger.ledger.models import JobSpec
from flowledger.ledger.types import JobType
from flowledger.states import Pool
from tests.ledger_access import enqueue_many

NOOP_TYPE = JobType("cli_jobs_noop", Pool.LEDGER.value)
NOOP = NOOP_TYPE.name
HANDLERS = f"""
from flowledger.worker import job_handler

@job_handler({NOOP!r})
async def noop(ctx):
    return {{"ok": True}}
"""


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("FLOWLEDGER_")}
    env.update(
        FLOWLEDGER_DATABASE_URL=f"sqlite:///{tmp_path / 'jobs.db'}",
        FLOWLEDGER_POLL_INTERVAL_S="0.2",
        FLOWLEDGER_SHUTDOWN_GRACE_S="2",
    )
    return env


def cli(tmp_path: Path, *args: str, code: int = 0) -> Any:
    """Run ``flowledger`` with ``args``; expect exit ``code``; parse stdout as JSON
    when ``--json`` was given."""
    done = subprocess.run(
        [sys.executable, "-m", "flowledger", *args],
        env=_env(tmp_path),
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
    )
    assert done.returncode == code, (args, done.stdout, done.stderr)
    return json.loads(done.stdout) if "--json" in args else done.stdout


def seed(
    tmp_path: Path, n: int, *, error: str = "HTTP 502 from https://erp.example/o/1"
) -> list[int]:
    """``n`` dead jobs of the no-op type, enqueued an hour ago (after migrating)."""
    cli(tmp_path, "migrate")

    async def main() -> list[int]:
        db = Database(f"sqlite:///{tmp_path / 'jobs.db'}")
        try:
            async with db.begin() as conn:
                created = datetime.now(UTC) - timedelta(hours=1)
                specs = [JobSpec(type=NOOP_TYPE, tenant_id="default", trace_id="t-1")] * n
                ids = await enqueue_many(conn, specs, now=created)
                await conn.execute(
                    update(jobs)
                    .where(jobs.c.id.in_(ids))
                    .values(
                        status="dead", last_error=error, last_error_fingerprint=fingerprint(error)
                    )
                )
            return ids
        finally:
            await db.dispose()

    return asyncio.run(main())


def audit_rows(tmp_path: Path) -> list[Any]:
    async def main() -> list[Any]:
        db = Database(f"sqlite:///{tmp_path / 'jobs.db'}")
        try:
            async with db.read() as conn:
                query = select(operation_audit).order_by(operation_audit.c.id)
                return list((await conn.execute(query)).all())
        finally:
            await db.dispose()

    return asyncio.run(main())


def test_retry_skip_and_replay_print_json_and_audit(tmp_path: Path) -> None:
    ids = seed(tmp_path, 8)
    one = cli(tmp_path, "jobs", "retry", str(ids[0]), "--payload", '{"n": 2}', "--json")
    assert (one["id"], one["status"], one["generation"]) == (ids[0], "pending", 2)
    refused = cli(tmp_path, "jobs", "retry", str(ids[0]), "--json", code=2)
    assert refused["code"] == "invalid_state"
    assert "automatic retry is already scheduled" in refused["message"]
    batch = cli(tmp_path, "jobs", "retry", *map(str, ids[:3]), "--rate", "10", "--json")
    assert (batch["matched"], batch["submitted"], batch["skipped"], batch["rate"]) == (3, 2, 1, 10)
    assert [i["outcome"] for i in batch["items"]] == ["skipped", "submitted", "submitted"]
    # the batch is recorded: `flowledger batches` lists and describes it (issue 29 item 4)
    listed = cli(tmp_path, "batches", "list", "--json")["items"]
    assert [(b["id"], b["kind"], b["counts"]) for b in listed] == [
        (batch["batchId"], "job.batch_retry", batch["counts"])
    ]
    shown = cli(tmp_path, "batches", "show", batch["batchId"], "--json")
    assert [(r["key"], r["result"]) for r in shown["results"]] == [
        (ids[0], "skipped"),
        (ids[1], "done"),
        (ids[2], "done"),
    ]
    assert batch["batchId"] in cli(tmp_path, "batches", "list")
    assert cli(tmp_path, "batches", "show", "nope", "--json", code=2)["code"] == "not_found"
    skip = cli(tmp_path, "jobs", "skip", str(ids[3]), "999", "--actor", "alice", "--json")
    assert (skip["submitted"], skip["skipped"]) == (1, 1)
    preview = cli(tmp_path, "jobs", "replay", "--preview", "--age", "60", "--json")
    assert (preview["matched"], preview["wouldSubmit"]) == (4, 4)
    assert [s["id"] for s in preview["samples"]] == ids[4:]
    replayed = cli(tmp_path, "jobs", "replay", "--no-follow", "--limit", "3", "--json")
    assert (replayed["matched"], replayed["submitted"], replayed["rate"]) == (4, 3, 20)
    assert "progress" not in replayed and len(replayed["replayBatchId"]) == 32
    human = cli(tmp_path, "jobs", "replay", "--no-follow", "--reason", "last one")
    assert "matched 1, submitted 1" in human
    actions = [(r.actor, r.action, r.result) for r in audit_rows(tmp_path)]
    assert actions == [
        ("cli", "job.retry", "ok"),
        ("cli", "job.retry", "failed"),
        ("cli", "job.batch_retry", "ok"),
        ("alice", "job.batch_skip", "ok"),
        ("cli", "job.replay", "ok"),
        ("cli", "job.replay", "ok"),
    ]


def test_reads_print_json(tmp_path: Path) -> None:
    ids = seed(tmp_path, 3)
    status = cli(tmp_path, "jobs", "status", "--json")
    assert status["dead"] == 3
    page = cli(tmp_path, "jobs", "list", "--status", "dead", "--limit", "2", "--json")
    assert [j["id"] for j in page["items"]] == [ids[2], ids[1]] and page["next"]
    shown = cli(tmp_path, "jobs", "show", str(ids[0]), "--json")
    assert (shown["id"], shown["status"], shown["executions"]) == (ids[0], "dead", [])
    chain = cli(tmp_path, "jobs", "chain", "t-1", "--json")
    assert [j["id"] for j in chain["jobs"]] == ids
    [cluster] = cli(tmp_path, "jobs", "clusters", "--json")
    assert cluster["count"] == 3
    fp = cluster["filter"]["fingerprint"]
    preview = cli(tmp_path, "jobs", "replay", "--preview", "--fingerprint", fp, "--json")
    assert preview["matched"] == 3
    missing = cli(tmp_path, "jobs", "show", "999", "--json", code=2)
    assert missing["code"] == "not_found"
    assert "id" in cli(tmp_path, "jobs", "list")  # a rich table


def test_replay_follows_the_batch_until_a_worker_ran_it(tmp_path: Path) -> None:
    ids = seed(tmp_path, 20)
    (tmp_path / "cli_jobs_handlers.py").write_text(HANDLERS)
    worker = subprocess.Popen(
        [sys.executable, "-m", "flowledger", "worker", "--import", "cli_jobs_handlers"],
        env=_env(tmp_path),
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        args = ("jobs", "replay", "--rate", "40", "--poll", "0.1", "--timeout", "60", "--json")
        followed = cli(tmp_path, *args)
    finally:
        worker.terminate()
        worker.wait(timeout=30)
    assert followed["submitted"] == len(ids)
    assert followed["progress"] == {"succeeded": len(ids)}
