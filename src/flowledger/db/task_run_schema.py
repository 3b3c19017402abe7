"""The declared schema of the system-task run record (SPEC O-18 engine
diagnostics): ``system_task_runs``, one row per periodic system task
(``workflow-jobs-drain``, ``schedule_planner``), overwritten by each run with
when it ran, on which node, and a small JSON summary of what it did (the
drain: how many jobs it reclaimed to pending or dead, their first ids, the
pools it hinted). One row per task name, never a history: the diagnostics
page shows the last run; the trace of what happened lives in the job rows.
Table definition only; shares :data:`flowledger.db.schema.metadata`."""

from __future__ import annotations

from sqlalchemy import Column, Integer, String, Table

from flowledger.db.schema import metadata
from flowledger.db.types import JsonType, UTCDateTime

system_task_runs = Table(
    "system_task_runs",
    metadata,
    Column("name", String(64), primary_key=True),
    Column("node_id", String(128), nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime, nullable=False),
    Column("duration_ms", Integer, nullable=False),
    Column("summary", JsonType, nullable=False),
)
