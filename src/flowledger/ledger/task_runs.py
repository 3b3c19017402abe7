"""The last run of each periodic system task (SPEC O-18): written by the
drain (``workflow-jobs-drain``) and the schedule planner in the transaction
of the run itself, read by the engine diagnostics. One upserted row per task
name (``system_task_runs``); a run that rolls back records nothing."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.ext.asyncio import AsyncConnection

from flowledger.db.dialects import upsert
from flowledger.db.task_run_schema import system_task_runs as runs


async def task_run_record(
    conn: AsyncConnection,
    name: str,
    *,
    node_id: str,
    started_at: datetime,
    finished_at: datetime,
    summary: dict[str, Any],
) -> None:
    """Record (overwrite) the last run of system task ``name``."""
    values = {
        "node_id": node_id,
        "started_at": started_at,
        "finished_at": finished_at,
        "duration_ms": max(0, int((finished_at - started_at).total_seconds() * 1000)),
        "summary": summary,
    }
    await conn.execute(
        upsert(conn, runs)
        .values(name=name, **values)
        .on_conflict_do_update(index_elements=[runs.c.name], set_=values)
    )


async def task_runs_list(conn: AsyncConnection) -> dict[str, dict[str, Any]]:
    """Every recorded last run, by task name."""
    rows = (await conn.execute(select(runs))).mappings().all()
    return {str(row["name"]): dict(row) for row in rows}
